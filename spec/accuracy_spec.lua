-- Issue 2's accuracy bounds, against a float64 reference computed in plain Lua:
--   cumsum of [0,1) values along a dim of 2^20: max relative error 1e-5;
--   cumprod of [0.99, 1.01) values along a dim of 2^16: max relative error 1e-4.
local H = require("spec.helpers")
local cs = require("cuscan")
local ffi = require("ffi")

-- max |y - ref| / |ref| over a line given as flat Lua arrays
local function worst_rel(y, ref)
  local worst = 0
  for i = 1, #ref do
    local r = ref[i]
    if r ~= 0 then
      local e = math.abs(y[i] - r) / math.abs(r)
      if e > worst then worst = e end
    end
  end
  return worst
end

local function ref_scan(xs, op, reverse)
  local out, acc = {}, op == "sum" and 0 or 1
  local n = #xs
  for k = 1, n do
    local i = reverse and n + 1 - k or k
    if op == "sum" then acc = acc + xs[i] else acc = acc * xs[i] end
    out[i] = acc
  end
  return out
end

H.each_device("accuracy", function(dev, it)
  local N = 2 ^ 20
  for _, reverse in ipairs({ false, true }) do
    it(("float32 cumsum of [0,1) values along 2^20 is within 1e-5 relative%s"):format(reverse and ", reversed" or ""), function()
      local seed = H.seed_for("acc sum" .. dev .. tostring(reverse))
      H.replay(seed, "cumsum 2^20", function()
        local x = cs.rand({ N }, { seed = seed, device = dev })
        local xs = x:totable()
        local y = x:cumsum(1, { reverse = reverse }):totable()
        local e = worst_rel(y, ref_scan(xs, "sum", reverse))
        assert.is_true(e <= 1e-5, ("max relative error %g"):format(e))
      end)
    end)
  end

  it("float32 cumsum along a strided dim of 2^20 (columns) is within 1e-5 relative", function()
    local seed = H.seed_for("acc sum columns" .. dev)
    H.replay(seed, "cumsum 2^20 x 2 along dim 1", function()
      local x = cs.rand({ N, 2 }, { seed = seed, device = dev })
      local y = x:cumsum(1)
      for col = 1, 2 do
        local xs = x:select(2, col):totable()
        local e = worst_rel(y:select(2, col):totable(), ref_scan(xs, "sum"))
        assert.is_true(e <= 1e-5, ("column %d: max relative error %g"):format(col, e))
      end
    end)
  end)

  it("float32 cumprod of [0.99, 1.01) values along 2^16 is within 1e-4 relative", function()
    local seed = H.seed_for("acc prod" .. dev)
    H.replay(seed, "cumprod 2^16", function()
      local x = cs.rand({ 2 ^ 16 }, { seed = seed, device = dev }) * 0.02 + 0.99
      local xs = x:totable()
      for _, v in ipairs({ xs[1], xs[#xs] }) do assert.is_true(v >= 0.99 and v < 1.0101) end
      local e = worst_rel(x:cumprod(1):totable(), ref_scan(xs, "prod"))
      assert.is_true(e <= 1e-4, ("max relative error %g"):format(e))
      local t = x:reshape({ 2 ^ 16, 1 }):transpose(1, 2)
      local e2 = worst_rel(t:cumprod(2, { reverse = true }):totable()[1], ref_scan(xs, "prod", true))
      assert.is_true(e2 <= 1e-4, ("reversed: max relative error %g"):format(e2))
    end)
  end)
end)

describe("the accuracy bound", function()
  it("is one a plain sequential float32 loop misses (the spec can fail)", function()
    local x = cs.rand({ 2 ^ 20 }, { seed = 2, device = "cpu" }):totable()
    local f = ffi.new("float[1]")
    local naive, acc = {}, 0
    for i = 1, #x do
      f[0] = acc + x[i]
      acc = f[0]
      naive[i] = acc
    end
    assert.is_true(worst_rel(naive, ref_scan(x, "sum")) > 1e-5)
  end)
end)

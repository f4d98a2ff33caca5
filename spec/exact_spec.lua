-- Exact values out: totable and item keep giving Lua numbers, and {exact = true} gives int64
-- tensors' values as int64_t cdata, exact beyond 2^53.
local ffi = require("ffi")
local H = require("spec.helpers")
local cs = require("cuscan")

local int64 = ffi.typeof("int64_t")

H.each_device("exact values", function(dev, it)
  it("totable({exact = true}) and item({exact = true}) give int64 values as int64_t cdata", function()
    H.with_rng("exact " .. dev, function(rng)
      local flat = {}
      for i = 1, 24 do
        flat[i] = rng:int64()
      end
      flat[1], flat[2], flat[3] = -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL, 9007199254740993LL
      local x = cs.tensor(flat, { dtype = "int64", device = dev }):reshape({ 2, 3, 4 })
      local t = x:totable({ exact = true })
      local k = 0
      for i = 1, 2 do
        for j = 1, 3 do
          for l = 1, 4 do
            k = k + 1
            assert.is_true(ffi.istype(int64, t[i][j][l]))
            assert.is_true(t[i][j][l] == flat[k], tostring(t[i][j][l]) .. " ~= " .. tostring(flat[k]))
            assert.is_true(x:narrow(1, i, 1):narrow(2, j, 1):narrow(3, l, 1):item({ exact = true }) == flat[k])
          end
        end
      end
      -- the view's values, exactly, through a transposed view too
      assert.is_true(x:transpose(1, 3):totable({ exact = true })[4][3][2] == flat[24])
    end)
  end)

  it("keeps Lua numbers by default and for the other dtypes", function()
    local x = cs.tensor({ 9007199254740993LL }, { dtype = "int64", device = dev })
    assert.equal("number", type(x:item()))
    assert.equal(2 ^ 53, x:item())
    assert.equal("number", type(x:totable()[1]))
    assert.equal("number", type(x:totable({ exact = false })[1]))
    for _, dt in ipairs({ "float32", "float64", "int32" }) do
      local y = cs.tensor({ 7 }, { dtype = dt, device = dev })
      assert.equal(7, y:item({ exact = true }))
      assert.same({ 7 }, y:totable({ exact = true }))
    end
    assert.same({ true }, cs.tensor({ true }, { device = dev }):totable({ exact = true }))
    assert.is_true(cs.tensor(-5LL, { dtype = "int64", device = dev }):totable({ exact = true }) == -5LL)
    assert.same({}, cs.zeros({ 0 }, { dtype = "int64", device = dev }):totable({ exact = true }))
  end)

  it("an int64 cumsum past 2^53 reads back exactly", function()
    local x = cs.full({ 4 }, 2 ^ 52 + 1, { dtype = "int64", device = dev })
    local t = x:cumsum(1):totable({ exact = true })
    assert.is_true(t[4] == 4 * (4503599627370496LL + 1))
    assert.equal("18014398509481988", (tostring(t[4]):gsub("LL$", "")))
  end)

  it("refuses unknown options", function()
    local x = cs.zeros({ 1 }, { dtype = "int64", device = dev })
    H.raises(function() x:totable({ exakt = true }) end, { "totable: opts: unknown option 'exakt' (expected exact)" })
    H.raises(function() x:item({ exact = 1 }) end, { "item: exact: expected a boolean, got number 1" })
    H.raises(function() x:item(true) end, { "item: opts: expected a table of options" })
  end)
end)

-- Lines of one element: an unmasked inclusive cumsum, cumprod or logcumsumexp of them is each
-- element rounded once to the output's dtype, done as a copy (explain says so), segmented (reset)
-- or not; exclusive and masked scans of such lines still run a scan (the empty prefix, the masked-out elements). Against
-- a plain-Lua oracle, into poisoned outputs, in views, with NaN, infinities and -0.0.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local nan, inf = 0 / 0, math.huge

-- {input dtype, output dtype (nil: the op's default)}
local PAIRS = {
  cumsum = { { "float32" }, { "float64" }, { "float16" }, { "bfloat16", "float32" }, { "float16", "float64" },
             { "int32", "int64" }, { "bool", "int64" }, { "int64" } },
  cumprod = { { "float32" }, { "bfloat16", "float64" }, { "int32" } },
  logcumsumexp = { { "float32" }, { "float64" }, { "bfloat16" }, { "float16", "float64" } },
}
local EMPTY = { cumsum = 0, cumprod = 1, logcumsumexp = -inf }

-- values with the specials the dtype can hold
local function values(rng, n, dtype)
  local v = {}
  for i = 1, n do
    if dtype == "bool" then v[i] = rng:bool()
    elseif dtype == "int32" or dtype == "int64" then v[i] = rng:int(-1000, 1000)
    else
      v[i] = rng:uniform(-50, 50)
      local k = i % 11
      if k == 1 then v[i] = nan elseif k == 2 then v[i] = inf elseif k == 3 then v[i] = -inf
      elseif k == 4 then v[i] = -0.0 end
    end
  end
  return v
end

local function same_value(want, got)
  if want ~= want then return got ~= got end
  if want == 0 and got == 0 then return 1 / want == 1 / got end   -- the sign of zero too
  return want == got
end

H.each_device("lines of one element", function(dev, it)
  local rng = H.rng(H.seed_for("one element lines " .. dev))
  -- shapes whose dim has size 1, and the dim
  local SHAPES = { { { 37, 1 }, 2 }, { { 1, 53 }, 1 }, { { 5, 1, 9 }, 2 }, { { 1 }, 1 } }

  for op, list in pairs(PAIRS) do
    it(op .. ": each element is its own scan, rounded once, whatever the layout", function()
      for _, pair in ipairs(list) do
        local idt, odt = pair[1], pair[2]
        for _, sd in ipairs(SHAPES) do
          local shape, dim = sd[1], sd[2]
          local n = H.numel(shape)
          local v = values(rng, n, idt)
          local x = cs.tensor(H.unflatten(v, shape), { dtype = idt, device = dev })
          local opts = { dtype = odt }
          local plan = cs.explain(x, dim, { op = op, dtype = odt })
          assert.equal(dev .. " copy:", plan:sub(1, #dev + 6), plan)
          local want = x:to(odt or x[op](x, dim).dtype):to("float64")
          -- a reset changes nothing in a line of one element: the same copy, into a poisoned output
          local r = cs.rand(shape, { seed = rng:int(1, 1e9), device = dev }):lt(0.5)
          local rplan = cs.explain(x, dim, { op = op, dtype = odt, reset = r })
          assert.equal(dev .. " copy:", rplan:sub(1, #dev + 6), rplan)
          local ydt = odt or x[op](x, dim).dtype
          local ry = cs.full(shape, H.poison(ydt), { dtype = ydt, device = dev })
          x[op](x, dim, { dtype = odt, reset = r, out = ry })
          local rw, rg = H.flatten(want:totable(), shape), H.flatten(ry:to("float64"):totable(), shape)
          for i = 1, n do
            assert.is_true(same_value(rw[i], rg[i]), ("%s %s segmented [%d]: %s, got %s"):format(
              op, idt, i, tostring(rw[i]), tostring(rg[i])))
          end
          -- through a transposed output too
          for _, layout in ipairs({ "plain", "transposed" }) do
            local y = x[op](x, dim, opts)
            if layout == "transposed" and #shape == 2 then
              local t = cs.full({ shape[2], shape[1] }, H.poison(y.dtype), { dtype = y.dtype, device = dev }):transpose(1, 2)
              opts.out = t
              y = x[op](x, dim, opts)
              opts.out = nil
            end
            local w, g = H.flatten(want:totable(), shape), H.flatten(y:to("float64"):totable(), shape)
            for i = 1, n do
              assert.is_true(same_value(w[i], g[i]), ("%s %s -> %s %s [%d]: %s, got %s"):format(
                op, idt, y.dtype, layout, i, tostring(w[i]), tostring(g[i])))
            end
          end
        end
      end
    end)

    it(op .. ": exclusive and masked scans of such lines give the empty prefix where nothing is kept", function()
      local x = cs.tensor(H.unflatten(values(rng, 37, "float64"), { 37, 1 }), { dtype = "float64", device = dev })
      local xs = H.flatten(x:totable(), { 37, 1 })
      local m = cs.rand({ 37, 1 }, { seed = rng:int(1, 1e9), device = dev }):lt(0.5)
      local ms = H.flatten(m:totable(), { 37, 1 })
      assert.is_nil(cs.explain(x, 2, { op = op, exclusive = true }):match("copy:"))
      assert.is_nil(cs.explain(x, 2, { op = op, mask = m }):match("copy:"))
      local exc = H.flatten(x[op](x, 2, { exclusive = true }):totable(), { 37, 1 })
      local msk = H.flatten(x[op](x, 2, { mask = m }):totable(), { 37, 1 })
      for i = 1, 37 do
        assert.is_true(same_value(EMPTY[op], exc[i]) or (EMPTY[op] == 0 and exc[i] == 0),
          ("%s exclusive [%d]: got %s (CUSCAN_SPEC_SEED=%s)"):format(op, i, tostring(exc[i]), tostring(H.base_seed)))
        local e = ms[i] and xs[i] or EMPTY[op]
        -- (CUDA's logcumsumexp takes a kept element through its own exp and log, lse_math.cuh, which
        -- bring x back within an ulp of max(1, |x|), not always bit for bit; the CPU's is exact)
        local close = op == "logcumsumexp" and dev == "cuda" and ms[i] and e == e and math.abs(e) < inf and
                      math.abs(msk[i] - e) <= 2 ^ -51 * math.max(1, math.abs(e))
        assert.is_true(close or same_value(e, msk[i]) or (e == 0 and msk[i] == 0),
          ("%s masked [%d]: x %.17g %s, want %.17g, got %.17g (CUSCAN_SPEC_SEED=%s)"):format(op, i, xs[i],
            ms[i] and "kept" or "masked out", e, msk[i], tostring(H.base_seed)))
      end
    end)
  end

  it("cummax and cummin: each element itself, bit for bit, at index 1, copied and filled", function()
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16", "int32", "int64", "bool" }) do
      for _, sd in ipairs(SHAPES) do
        local shape, dim = sd[1], sd[2]
        local n = H.numel(shape)
        local x = cs.tensor(H.unflatten(values(rng, n, dtype), shape), { dtype = dtype, device = dev })
        for _, op in ipairs({ "cummax", "cummin" }) do
          for _, reverse in ipairs({ false, true }) do
            local plan = cs.explain(x, dim, { op = op, reverse = reverse })
            assert.equal(dev .. " copy:", plan:sub(1, #dev + 6), plan)
            local v = cs.full(shape, H.poison(dtype), { dtype = dtype, device = dev })
            local i = cs.full(shape, -7, { dtype = "int64", device = dev })
            local gv, gi = x[op](x, dim, { reverse = reverse, out = { v, i } })
            assert.is_true(H.bits(x) == H.bits(gv), ("%s %s %s: values differ in their bits"):format(op, dtype, plan))
            assert.same(H.unflatten((function() local t = {} for k = 1, n do t[k] = 1 end return t end)(), shape),
                        gi:totable())
          end
        end
        -- segmented: a line's only element starts its segment whatever reset says, so the same copy
        local r = cs.rand(shape, { seed = rng:int(1, 1e9), device = dev }):lt(0.5)
        for _, op in ipairs({ "cummax", "cummin" }) do
          local plan = cs.explain(x, dim, { op = op, reset = r })
          assert.equal(dev .. " copy:", plan:sub(1, #dev + 6), plan)
          local v = cs.full(shape, H.poison(dtype), { dtype = dtype, device = dev })
          local i = cs.full(shape, -7, { dtype = "int64", device = dev })
          local gv, gi = x[op](x, dim, { reset = r, reverse = rng:bool(), out = { v, i } })
          assert.is_true(H.bits(x) == H.bits(gv), ("%s %s segmented: values differ in their bits"):format(op, dtype))
          assert.same(H.unflatten((function() local t = {} for k = 1, n do t[k] = 1 end return t end)(), shape),
                      gi:totable())
        end
        -- masked: a masked-out element has no index (0), as the kernels give it
        local m = cs.rand(shape, { seed = rng:int(1, 1e9), device = dev }):lt(0.5)
        assert.is_nil(cs.explain(x, dim, { op = "cummax", mask = m }):match("copy:"))
      end
    end
  end)

end)

describe("lines of one element under a forced family #cuda", function()
  local it = H.cuda_it()
  it("still run the forced family's kernel", function()
    cs.force_family("slabs")
    local x = cs.tensor({ { 1.5 }, { -inf }, { 2 } }, { device = "cuda" })
    local ok, plan = pcall(cs.explain, x, 2, { op = "logcumsumexp" })
    local y = x:logcumsumexp(2):totable()
    cs.force_family(nil)
    assert.is_true(ok, plan)
    assert.equal("cuda slabs/", plan:sub(1, 11), plan)
    assert.same({ { 1.5 }, { -inf }, { 2 } }, y)
  end)
end)

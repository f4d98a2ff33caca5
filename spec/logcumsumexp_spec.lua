-- logcumsumexp against the plain-Lua oracle on both devices (the oracle carries a running maximum
-- with the sum of exp(x - max), an independent form of the library's pairwise combine): every float
-- dtype pair, every dim, views, reverse x exclusive x mask x reset; special values (-inf as the
-- identity, NaN, +inf), inputs near each dtype's maximum (no overflow), accuracy on long lines of
-- U[-100, 100) (1e-6 relative in float32 against float64), determinism and misuse.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local PAIRS = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" } }
for _, half in ipairs({ "float16", "bfloat16" }) do
  for _, out in ipairs({ half, "float32", "float64" }) do PAIRS[#PAIRS + 1] = { half, out } end
end

local function flags_of(k)  -- the k-th of the 16 combinations of the four flags
  return { reverse = k % 2 == 1, exclusive = math.floor(k / 2) % 2 == 1, masked = math.floor(k / 4) % 2 == 1,
           reset = math.floor(k / 8) % 2 == 1 }
end

-- x's values in [-5, 5), stored in its dtype
local function random_input(rng, shape, dtype, dev)
  return cs.tensor(H.build(shape, function() return rng:uniform(-5, 5) end), { dtype = dtype, device = dev })
end

H.each_device("logcumsumexp along every dim", function(dev, it)
  for _, shape in ipairs({ { 9 }, { 5, 6 }, { 3, 4, 5 } }) do
    for dim = 1, #shape do
      for _, pair in ipairs(PAIRS) do
        local idt, odt = pair[1], pair[2]
        local name = ("%s->%s dim %d of %s, every flag"):format(idt, odt, dim, table.concat(shape, "x"))
        it(name, function()
          H.with_rng(name .. dev, function(rng)
            local x = random_input(rng, shape, idt, dev)
            local xv = x:totable()
            for k = 0, 15 do
              local f = flags_of(k)
              local mv = f.masked and H.random_mask(rng, shape, 0.7) or nil
              local rv = f.reset and H.random_mask(rng, shape, 0.25) or nil
              local opts = { reverse = f.reverse, exclusive = f.exclusive,
                             mask = mv and cs.tensor(mv, { device = dev }), reset = rv and cs.tensor(rv, { device = dev }),
                             dtype = odt ~= idt and odt or nil }
              local want = H.scan_ref(xv, dim, { op = "lse", reverse = f.reverse, exclusive = f.exclusive, mask = mv,
                                                 reset = rv })
              local y = x:logcumsumexp(dim, opts)
              assert.equal(odt, y.dtype)
              H.assert_result(want, y, odt, "lse", shape[dim])
              -- into a poisoned out, function form
              opts.out = cs.full(shape, 0 / 0, { dtype = odt, device = dev })
              assert.is_true(rawequal(opts.out, cs.logcumsumexp(x, dim, opts)))
              H.assert_result(want, opts.out, odt, "lse", shape[dim])
            end
            assert.same(xv, x:totable())
          end)
        end)
      end
    end
  end

  it("of views: transposed, narrowed and stride-2 inputs, masks and outputs", function()
    H.with_rng("logcumsumexp views" .. dev, function(rng)
      local base = random_input(rng, { 6, 9, 2 }, "float32", dev)
      for _, x in ipairs({ base:select(3, 2), base:transpose(1, 2), base:narrow(2, 3, 5):transpose(1, 3) }) do
        local xv = x:totable()
        for dim = 1, x:dim() do
          local mbase = cs.rand({ 6, 9, 2 }, { seed = rng:int(1, 1e6), device = dev }):lt(0.7)
          local m = x:dim() == 2 and mbase:select(3, 2) or nil
          local want = H.scan_ref(xv, dim, { op = "lse", reverse = true, mask = m and m:totable() })
          H.assert_result(want, x:logcumsumexp(dim, { reverse = true, mask = m }), "float32", "lse", x:size(dim))
          local out = cs.full({ 9, 6, 2 }, 0 / 0, { device = dev }):select(3, 1)
          if x:dim() == 2 and x:size(1) == 9 then
            x:logcumsumexp(dim, { out = out })
            H.assert_result(H.scan_ref(xv, dim, { op = "lse" }), out, "float32", "lse", x:size(dim))
          end
        end
      end
    end)
  end)
end)

H.each_device("logcumsumexp in place and of 0-d and empty tensors", function(dev, it)
  it("writes x itself with out = x", function()
    H.with_rng("logcumsumexp in place" .. dev, function(rng)
      local x = random_input(rng, { 4, 33 }, "float64", dev)
      local want = H.scan_ref(x:totable(), 2, { op = "lse", exclusive = true })
      assert.is_true(rawequal(x, x:logcumsumexp(2, { exclusive = true, out = x })))
      H.assert_result(want, x, "float64", "lse", 33)
    end)
  end)

  it("scans a 0-d tensor as a line of one, and an empty one into an empty result", function()
    assert.equal(-2.5, cs.tensor(-2.5, { device = dev }):logcumsumexp(1):item())
    assert.equal(-math.huge, cs.tensor(-2.5, { device = dev }):logcumsumexp(-1, { exclusive = true }):item())
    assert.same({ 0, 4 }, cs.zeros({ 0, 4 }, { device = dev }):logcumsumexp(1):shape())
  end)
end)

H.each_device("logcumsumexp: special values", function(dev, it)
  local nan, inf = 0 / 0, math.huge

  it("-inf is the identity: all -inf gives -inf, and an exclusive scan starts at -inf", function()
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      for _, l in ipairs(H.line_layouts({ -inf, -inf, 0, -inf, math.log(3) }, dev, dtype)) do
        local kind, x, dim = l[1], l[2], l[3]
        local y = H.first_line(x:logcumsumexp(dim), kind)
        assert.same({ -inf, -inf, 0 }, { y[1], y[2], y[3] }, dtype .. " " .. kind)
        assert.is_true(math.abs(y[5] - H.stored(math.log(4), dtype)) <= 1e-2 * math.log(4))
        y = H.first_line(x:logcumsumexp(dim, { exclusive = true }), kind)
        assert.same({ -inf, -inf, -inf, 0 }, { y[1], y[2], y[3], y[4] })
        y = H.first_line(x:logcumsumexp(dim, { exclusive = true, reverse = true }), kind)
        assert.equal(-inf, y[5])
      end
    end
  end)

  it("NaN propagates from where it appears; +inf gives +inf until a NaN comes", function()
    local x = cs.tensor({ 1, inf, 2, inf, -inf, nan, 3 }, { device = dev })
    local y = x:logcumsumexp(1):totable()
    assert.same({ 1, inf, inf, inf, inf }, { y[1], y[2], y[3], y[4], y[5] })
    assert.is_true(y[6] ~= y[6] and y[7] ~= y[7])
    y = x:logcumsumexp(1, { reverse = true }):totable()
    assert.equal(3, y[7])
    for k = 1, 6 do assert.is_true(y[k] ~= y[k], k) end
    y = x:logcumsumexp(1, { reverse = true, mask = x:ne(3):logical_and(x:eq(x)) }):totable()
    assert.same({ inf, inf, inf, inf, -inf, -inf, -inf }, y)
  end)

  it("masked-out elements are skipped, NaN and +inf under a false mask included", function()
    local x = cs.tensor({ nan, 0, inf, 0, nan }, { device = dev, dtype = "float64" })
    local m = cs.tensor({ false, true, false, true, false }, { device = dev })
    assert.tensor_near({ -inf, 0, 0, math.log(2), math.log(2) }, x:logcumsumexp(1, { mask = m }), 1e-15, 0)
  end)

  it("does not overflow for inputs near the dtype's largest value, nor underflow far below", function()
    local MAX = { float32 = 3.4028234663852886e38, float64 = 1.7976931348623157e308, float16 = 65504,
                  bfloat16 = 3.3895313892515355e38 }
    for dtype, big in pairs(MAX) do
      local v = { big, big, big / 2, big }
      local x = cs.tensor(v, { device = dev, dtype = dtype })
      local y = x:logcumsumexp(1, { dtype = dtype })
      local ref = H.as_stored(H.scan_line(x:totable(), { op = "lse" }), dtype)
      for k, r in ipairs(y:totable()) do
        assert.is_true(r < math.huge, ("%s: element %d overflowed"):format(dtype, k))
        assert.equal(ref[k], r, dtype)
      end
      local tiny = cs.tensor({ -big, -big, -big }, { device = dev, dtype = dtype }):logcumsumexp(1):totable()
      for k = 1, 3 do assert.is_true(tiny[k] > -math.huge and tiny[k] == H.stored(-big, dtype), dtype) end
    end
    -- a float32 input whose exp overflows float64 too: 1000 + log(2)
    local y = cs.tensor({ 1000, 1000 }, { device = dev }):logcumsumexp(1):totable()
    assert.equal(H.f32(1000 + math.log(2)), y[2])
  end)

  it("keeps its accuracy across magnitudes: tiny, moderate, past 2^60 and back, in one line", function()
    -- float64 in and out: elements from 1e-300 to 1e300 in magnitude, both signs, shuffled,
    -- with runs of equal ones (their log-sum needs the count), against the oracle's fold
    H.with_rng("logcumsumexp magnitudes" .. dev, function(rng)
      local v = {}
      while #v < 3000 do
        local e = rng:pick({ -300, -20, -3, 0, 1, 2, 5, 10, 17, 18, 19, 25, 100, 300 })
        local x = (rng:uniform(1, 10) * 10 ^ e) * (rng:bool() and -1 or 1)
        for _ = 1, rng:bool(0.1) and 3 or 1 do v[#v + 1] = x end
      end
      local x = cs.tensor(v, { device = dev, dtype = "float64" })
      for _, rev in ipairs({ false, true }) do
        local want = H.scan_line(v, { op = "lse", reverse = rev })
        assert.tensor_near(want, x:logcumsumexp(1, { reverse = rev }), H.tol("float64", "lse", 64))
      end
      -- the same values rounded to float32; outputs within 1e-12 of zero are held to that absolute
      -- floor instead: a float64 fold's log of its sum is exact to about ulp(1) (the oracle's too),
      -- and a sum from a reference up to 600 above an output to ulp(600), not to float32 relative
      -- precision of a value such as -2e-20
      local x32 = x:to("float32")
      local want = H.scan_line(x32:totable(), { op = "lse" })
      assert.tensor_near(H.as_stored(want, "float32"), x32:logcumsumexp(1), 2 ^ -23, 1e-12)
    end)
  end)
end)

describe("logcumsumexp on the CPU along lines longer than a chunk", function()
  -- the CPU's rows take lines of 64 or more elements through plain sums chunk by chunk where they
  -- can and step by step where they cannot (a spike far above the rest, a NaN, -inf, initial
  -- values): every flag but reset, rows and columns, against the oracle
  local dev = "cpu"
  for _, pair in ipairs({ { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" } }) do
    local idt, odt = pair[1], pair[2]
    for _, case in ipairs({ { { 3, 301 }, 2 }, { { 301, 3 }, 1 }, { { 150, 40 }, 1 } }) do
      local shape, dim = case[1], case[2]
      local name = ("%s->%s %s along dim %d, spikes, NaN and -inf"):format(idt, odt, table.concat(shape, "x"), dim)
      it(name, function()
        H.with_rng(name .. dev, function(rng)
          local len = shape[dim]
          local xv = H.build(shape, function() return rng:uniform(-100, 100) end)
          local function set(line, k, v) -- element k of line `line`
            if dim == 2 then xv[line][k] = v else xv[k][line] = v end
          end
          set(1, rng:int(1, len), 1000)          -- past the span: the chunks after it walk step by step
          set(2, rng:int(1, len), 0 / 0)
          set(2, rng:int(1, len), -math.huge)
          set(3, rng:int(70, len), 700)
          local x = cs.tensor(xv, { dtype = idt, device = dev })
          xv = x:totable()
          for k = 0, 7 do
            local f = flags_of(k)
            local mv = f.masked and H.random_mask(rng, shape, 0.7) or nil
            local opts = { reverse = f.reverse, exclusive = f.exclusive, mask = mv and cs.tensor(mv, { device = dev }),
                           dtype = odt ~= idt and odt or nil }
            local want = H.scan_ref(xv, dim, { op = "lse", reverse = f.reverse, exclusive = f.exclusive, mask = mv })
            opts.out = cs.full(shape, 12345, { dtype = odt, device = dev })
            x:logcumsumexp(dim, opts)
            H.assert_result(want, opts.out, odt, "lse", len)
          end
        end)
      end)
    end
  end

  it("from initial values over lines of 200, and one element of -0.0 stays -0.0", function()
    H.with_rng("logcumsumexp long initial" .. dev, function(rng)
      local xv = H.build({ 4, 200 }, function() return rng:uniform(-50, 50) end)
      local init = { rng:uniform(-50, 50), -math.huge, 300, rng:uniform(-5, 5) }
      local x = cs.tensor(xv, { dtype = "float64", device = dev })
      local y = x:logcumsumexp(2, { initial = cs.tensor(init, { dtype = "float64", device = dev }) })
      local want = {}
      for l = 1, 4 do
        local line = { init[l] }
        for k = 1, 200 do line[k + 1] = xv[l][k] end
        local full = H.scan_line(line, { op = "lse" })
        want[l] = {}
        for k = 1, 200 do want[l][k] = full[k + 1] end
      end
      assert.tensor_near(want, y, H.tol("float64", "lse", 201))
      local z = cs.tensor({ -0.0 }, { dtype = "float64", device = dev }):logcumsumexp(1):totable()[1]
      assert.equal(-math.huge, 1 / z)
    end)
  end)
end)

H.each_device("logcumsumexp: accuracy and determinism", function(dev, it)
  -- 2^20 elements as the issue asks, on both devices: the CPU's fold takes tens of ms here
  local N = 2 ^ 20

  it("is within 1e-6 relative in float32 of a float64 reference on 2^20 elements of U[-100, 100)", function()
    local x = (cs.rand({ N }, { seed = 20, device = dev }) * 200 - 100)
    local xv = x:totable()
    for _, rev in ipairs({ false, true }) do
      local y = x:logcumsumexp(1, { reverse = rev }):totable()
      local ref = H.scan_line(xv, { op = "lse", reverse = rev })
      local worst, at = 0, 0
      for k = 1, N do
        local e = math.abs(y[k] - ref[k]) / math.abs(ref[k])
        if e > worst then worst, at = e, k end
      end
      assert.is_true(worst <= 1e-6, ("reverse=%s: relative error %.3g at %d (%.9g against %.9g)"):format(
        tostring(rev), worst, at, y[at] or 0, ref[at] or 0))
    end
    -- columns of a 2^14 x 16 tensor
    local cols = (cs.rand({ 2 ^ 14, 16 }, { seed = 21, device = dev }) * 200 - 100)
    local want = H.scan_ref(cols:totable(), 1, { op = "lse" })
    assert.tensor_near(want, cols:logcumsumexp(1), 1e-6, 0)
  end)

  it("gives the same bits on every run", function()
    local x = cs.randn({ 64, 5000 }, { seed = 22, device = dev }) * 30
    local m = cs.rand({ 64, 5000 }, { seed = 23, device = dev }):lt(0.9)
    local r = cs.rand({ 64, 5000 }, { seed = 24, device = dev }):lt(0.01)
    for _, dim in ipairs({ 1, 2 }) do
      local first = H.bits(x:logcumsumexp(dim, { mask = m, reset = r }))
      for _ = 1, 3 do
        assert.is_true(first == H.bits(x:logcumsumexp(dim, { mask = m, reset = r })), "bits changed between runs")
      end
    end
  end)
end)

H.each_device("logcumsumexp misuse", function(dev, it)
  it("raises cuscan: errors that name the argument", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    local i = cs.tensor({ 1, 2, 3 }, { dtype = "int32", device = dev })
    local b = cs.tensor({ true, false }, { device = dev })
    H.raises(function() i:logcumsumexp(1) end, { "logcumsumexp: x: expected a float tensor", "got int32" })
    H.raises(function() b:logcumsumexp(1) end, { "logcumsumexp: x: expected a float tensor", "got bool" })
    H.raises(function() x:to("float64"):logcumsumexp(1, { dtype = "float32" }) end, { "logcumsumexp: dtype: a float64 input cannot accumulate into float32" })
    H.raises(function() x:logcumsumexp(1, { out = cs.zeros({ 3 }, { dtype = "float64", device = dev }) }) end, { "logcumsumexp: out: expected dtype float32", "pass dtype = \"float64\"" })
    H.raises(function() x:logcumsumexp(1, { out = x:narrow(1, 1, 2) }) end, { "logcumsumexp: out: expected x's shape 3, got 2" })
    H.raises(function() x:logcumsumexp(0) end, { "logcumsumexp: dim: 0 is out of range", "dims are 1-based" })
    H.raises(function() x:logcumsumexp(1, { reverse = 1 }) end, { "logcumsumexp: reverse: expected a boolean" })
    assert.tensor_equal({ 1, 2, 3 }, x)
  end)
end)

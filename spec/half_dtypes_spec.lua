-- float16 and bfloat16 as dtypes (issue 14, item 2): conversions both ways with the special values,
-- creation, printing, element-wise ops and comparisons, reductions, result checks and DLPack. The
-- oracle is spec/helpers.lua's: H.round_half rounds a double to either format from its definition
-- (to nearest, ties to even, straight from the double), H.half_value reads a bit pattern. Arithmetic
-- is computed in double and rounded once, so results must equal the oracle's exactly on both
-- devices; exp, log and pow only within 1 ulp on CUDA (its libm may differ in the last bit of the
-- double).
local ffi = require("ffi")
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local inf, nan = math.huge, 0 / 0
local HALVES = { "float16", "bfloat16" }

-- Values equal as stored: NaN equals NaN, -0.0 differs from +0.0.
local function same(a, b)
  if a ~= a then return b ~= b end
  return a == b and (a ~= 0 or 1 / a == 1 / b)
end

local function assert_values(expected, got, what, ulps, dtype)
  assert.equal(#expected, #got, what)
  for i = 1, #expected do
    local ok = same(expected[i], got[i]) or (ulps and H.ulps(expected[i], got[i], dtype) <= ulps)
    if not ok then
      error(("%s: element %d: expected %.17g, got %.17g"):format(what, i, expected[i], got[i]), 2)
    end
  end
end

-- Doubles that test a rounding: spread over the format's range and beyond, the midpoints between
-- neighbouring values of the format and the doubles either side of them, and small integers.
local function rounding_cases(rng, dtype)
  local f = H.HALF[dtype]
  local out = {}
  for _ = 1, 600 do
    local b = rng:int(0, 0xffff)
    local lo, hi = H.half_value(b, dtype), H.half_value(b + 1 > 0xffff and b or b + 1, dtype)
    if lo == lo and hi == hi and math.abs(lo) < inf and math.abs(hi) < inf then
      local mid = (lo + hi) / 2
      out[#out + 1] = mid
      out[#out + 1] = mid + math.abs(mid) * 2 ^ -52 + 2 ^ -1074
      out[#out + 1] = mid - math.abs(mid) * 2 ^ -52 - 2 ^ -1074
    end
    out[#out + 1] = rng:uniform(-1, 1) * 2 ^ rng:int(f.emin - f.mbits - 3, -f.emin + 3)
    out[#out + 1] = rng:int(-5000, 5000)
  end
  return out
end

H.each_device("float16 and bfloat16 conversions", function(dev, it)
  for _, dtype in ipairs(HALVES) do
    it(dtype .. ": every one of the 65536 values converts to float64 exactly and back to the same bits", function()
      local all = {}
      for b = 0, 0xffff do all[b + 1] = b end
      local x = H.from_half_bits(all, dtype, dev)
      local wide = x:to("float64")
      local want = {}
      for b = 0, 0xffff do want[b + 1] = H.half_value(b, dtype) end
      assert_values(want, wide:totable(), dtype .. " to float64")
      assert_values(want, x:totable(), dtype .. " read by totable")
      local back = H.half_bits(wide:to(dtype))
      for b = 0, 0xffff do
        local v = want[b + 1]
        if v == v then
          assert.equal(b, back[b + 1], ("%s %04x back from float64"):format(dtype, b))
        else
          assert.is_true(H.half_value(back[b + 1], dtype) ~= H.half_value(back[b + 1], dtype), "NaN stays NaN")
        end
      end
    end)

    it(dtype .. ": doubles round to nearest even straight from the double, on every way in", function()
      H.with_rng("half rounding " .. dtype .. dev, function(rng)
        local v = rounding_cases(rng, dtype)
        local want = {}
        for i, d in ipairs(v) do want[i] = H.round_half(d, dtype) end
        local wide = cs.tensor(v, { dtype = "float64", device = dev })
        assert_values(want, wide:to(dtype):totable(), "x:to")
        assert_values(want, cs.tensor(v, { dtype = dtype, device = dev }):totable(), "cs.tensor")
        assert_values(want, cs.zeros({ #v }, { dtype = dtype, device = dev }):copy(wide):totable(), "x:copy")
        -- from float32: the float32 value (exact in a double) rounds once
        local narrow = wide:to("float32")
        local want32 = {}
        for i, d in ipairs(narrow:totable()) do want32[i] = H.round_half(d, dtype) end
        assert_values(want32, narrow:to(dtype):totable(), "float32 to " .. dtype)
      end)
    end)
  end

  it("the special values: overflow to +-inf, NaN kept, signed zeros and denormals kept, ties to even", function()
    local cases = {
      float16 = {
        { 65504, 65504 }, { 65519.99, 65504 }, { 65520, inf }, { -65520, -inf }, { 1e300, inf },
        { 2 ^ -24, 2 ^ -24 }, { 2 ^ -25, 0 }, { 2 ^ -25 * 1.0000001, 2 ^ -24 }, { 3 * 2 ^ -26, 2 ^ -24 },
        { -2 ^ -26, -0.0 }, { 3 * 2 ^ -25, 2 * 2 ^ -24 }, { 2 ^ -14 - 2 ^ -25, 2 ^ -14 },
        { 1 + 2 ^ -11, 1 }, { 1 + 3 * 2 ^ -11, 1 + 2 ^ -9 }, { 2049, 2048 }, { 2051, 2052 },
        -- just above a tie: float32 would round onto the tie and then to even, the double does not
        { 1 + 2 ^ -11 + 2 ^ -40, 1 + 2 ^ -10 },
      },
      bfloat16 = {
        { 3.3895313892515355e38, 3.3895313892515355e38 }, { (2 - 2 ^ -8) * 2 ^ 127, inf }, { -1e39, -inf },
        { 2 ^ -133, 2 ^ -133 }, { 2 ^ -134, 0 }, { 3 * 2 ^ -135, 2 ^ -133 }, { -2 ^ -135, -0.0 },
        { 1e-40, 2 ^ -133 }, { 5e-39, 54 * 2 ^ -133 }, { 1 + 2 ^ -8, 1 }, { 1 + 3 * 2 ^ -8, 1 + 2 ^ -6 }, { 257, 256 }, { 259, 260 },
        { 1 + 2 ^ -8 + 2 ^ -30, 1 + 2 ^ -7 },
      },
    }
    for dtype, list in pairs(cases) do
      local v, want = {}, {}
      for i, c in ipairs(list) do
        v[i] = c[1]
        want[i] = c[2]
        assert.is_true(same(want[i], H.round_half(v[i], dtype)), "the oracle agrees with the case " .. i)
      end
      v[#v + 1], want[#want + 1] = nan, nan
      v[#v + 1], want[#want + 1] = -nan, nan
      v[#v + 1], want[#want + 1] = inf, inf
      v[#v + 1], want[#want + 1] = -inf, -inf
      v[#v + 1], want[#want + 1] = -0.0, -0.0
      local x = cs.tensor(v, { dtype = "float64", device = dev }):to(dtype)
      assert_values(want, x:totable(), dtype)
      assert_values(want, x:to("float32"):to("float64"):totable(), dtype .. " through float32")
    end
  end)

  it("to integers truncates toward zero and saturates; NaN becomes 0", function()
    for _, dtype in ipairs(HALVES) do
      local x = cs.tensor({ inf, -inf, nan, 3.75, -3.75, 2048, -0.0 }, { dtype = dtype, device = dev })
      assert.same({ 2147483647, -2147483648, 0, 3, -3, 2048, 0 }, x:to("int32"):totable())
      assert.same({ true, true, true, true, true, true, false }, x:to("bool"):totable())
    end
    local big = cs.tensor({ 3e38, -3e38 }, { dtype = "bfloat16", device = dev }):to("int64")
    assert.same({ 0x7fffffffffffffffLL, -0x7fffffffffffffffLL - 1 }, big:totable({ exact = true }))
    -- and integers into them round as any value does
    local ints = cs.tensor({ 2049, 65535, -16777217 }, { dtype = "int32", device = dev })
    assert.same({ 2048, inf, -inf }, ints:to("float16"):totable())
    assert.same({ 2048, 65536, -16777216 }, ints:to("bfloat16"):totable())
  end)
end)

H.each_device("float16 and bfloat16 tensors", function(dev, it)
  for _, dtype in ipairs(HALVES) do
    local o = { dtype = dtype, device = dev }
    local r = function(v) return H.round_half(v, dtype) end

    it(dtype .. ": every constructor makes one, holding the values rounded", function()
      for _, t in ipairs({ cs.zeros({ 2, 3 }, o), cs.ones({ 2, 3 }, o), cs.full({ 2, 3 }, 0.1, o), cs.empty({ 2, 3 }, o),
                           cs.rand({ 2, 3 }, o), cs.randn({ 2, 3 }, o), cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, o) }) do
        assert.equal(dtype, t.dtype)
        assert.equal(dev, t.device)
        assert.same({ 2, 3 }, t:shape())
      end
      assert.same({ 0, 0, 0 }, cs.zeros({ 3 }, o):totable())
      assert.same({ 1, 1, 1 }, cs.ones({ 3 }, o):totable())
      assert.same({ r(0.1), r(0.1) }, cs.full({ 2 }, 0.1, o):totable())
      assert.same({ r(1 / 3) }, cs.zeros({ 1 }, o):fill(1 / 3):totable())
      local a = cs.arange(2040, 2060, o):totable()
      for i = 1, 20 do assert.equal(r(2039 + i), a[i]) end
      local b = cs.arange(0, 1, 0.1, o):totable()
      for i = 1, 10 do assert.equal(r((i - 1) * 0.1), b[i]) end
      local x = cs.zeros({ 3 }, o)
      x[2] = 1 / 7
      assert.same({ 0, r(1 / 7), 0 }, x:totable())
      assert.equal(r(1 / 7), x[2])
      assert.equal(r(0.3), cs.tensor(0.3, o):item())
    end)

    it(dtype .. ": rand draws values exact in the dtype and below 1; randn rounds the float64 normals", function()
      local seed = H.seed_for("half rand " .. dtype .. dev)
      local bits = dtype == "float16" and 11 or 8
      local u = cs.rand({ 20000 }, { dtype = dtype, device = dev, seed = seed })
      local vals = u:totable()
      local seen = {}
      for _, v in ipairs(vals) do
        assert.is_true(v >= 0 and v < 1 and v * 2 ^ bits == math.floor(v * 2 ^ bits), tostring(v))
        seen[v] = true
      end
      local distinct = 0
      for _ in pairs(seen) do distinct = distinct + 1 end
      assert.is_true(distinct > 2 ^ bits * 0.9, "values cover the grid")
      assert.is_true(math.abs(u:mean() - 0.5) < 0.02)
      assert.same(vals, cs.rand({ 20000 }, { dtype = dtype, device = "cpu", seed = seed }):totable())
      -- randn: the float64 normals of the seed, rounded once
      local z = cs.randn({ 4000 }, { dtype = dtype, device = dev, seed = seed }):totable()
      local ref = cs.randn({ 4000 }, { dtype = "float64", device = dev, seed = seed }):totable()
      for i = 1, #z do
        assert.is_true(H.ulps(r(ref[i]), z[i], dtype) <= (dev == "cpu" and 0 or 1), i)
      end
    end)

    it(dtype .. ": prints its values and dtype", function()
      local s = tostring(cs.tensor({ 1, 2.5, -0.0, 1 / 3 }, o))
      assert.matches("[cuscan " .. dtype .. " tensor 4, " .. H.printed_device(dev) .. "]", s, 1, true)
      assert.matches("2.5000", s, 1, true)
      assert.matches("-0.0000", s, 1, true)
      assert.matches(("%.4f"):format(r(1 / 3)), s, 1, true)
      local special = tostring(cs.tensor({ nan, inf, -inf, 1 }, o))
      assert.matches("nan,  inf, -inf,   1.", special, 1, true)
      assert.matches("...", tostring(cs.zeros({ 2000 }, o)), 1, true)
    end)
  end

  it("element-wise arithmetic computes in double and rounds once; dtypes promote as in torch", function()
    H.with_rng("half ew " .. dev, function(rng)
      local n = 500
      for _, dtype in ipairs(HALVES) do
        local r = function(v) return H.round_half(v, dtype) end
        local av, bv = {}, {}
        for i = 1, n do
          av[i] = rng:uniform(-4, 4)
          bv[i] = rng:pick({ rng:uniform(-4, 4), rng:uniform(0.5, 2), 0, -0.0, inf, nan, 2 ^ -20 })
        end
        local a, b = cs.tensor(av, { dtype = dtype, device = dev }), cs.tensor(bv, { dtype = dtype, device = dev })
        local sa, sb = a:totable(), b:totable()
        local function check(name, got, fn, ulps)
          assert.equal(dtype, got.dtype, name)
          local want = {}
          for i = 1, n do want[i] = r(fn(sa[i], sb[i])) end
          assert_values(want, got:totable(), dtype .. " " .. name, dev == "cuda" and ulps, dtype)
        end
        check("+", a + b, function(x, y) return x + y end)
        check("-", a - b, function(x, y) return x - y end)
        check("*", a * b, function(x, y) return x * y end)
        check("/", a / b, function(x, y) return x / y end)
        check("+ 0.1", a + 0.1, function(x) return x + 0.1 end)
        check("3 -", 3 - a, function(x) return 3 - x end)
        check("maximum", a:maximum(b), function(x, y) return (y ~= y or x ~= x) and nan or math.max(x, y) end)
        check("abs", a:abs(), function(x) return math.abs(x) end)
        check("neg", -a, function(x) return -x end)
        check("exp", a:exp(), function(x) return math.exp(x) end, 1)
        check("log", b:log(), function(_, y) return y < 0 and nan or math.log(y) end, 1)
        check("sqrt", b:sqrt(), function(_, y) return y < 0 and nan or math.sqrt(y) end)
        check("pow", a:abs():pow(b), function(x, y) return math.abs(x) ^ y end, 1)
        -- comparisons on the stored values
        local lt, eq = a:lt(b):totable(), a:eq(b):totable()
        for i = 1, n do
          assert.equal(sa[i] < sb[i], lt[i])
          assert.equal(sa[i] == sb[i], eq[i])
        end
        -- promotion: an integer or bool tensor or a number keeps the half dtype; float32 and
        -- float64 win; float16 with bfloat16 gives float32
        local i32 = cs.tensor({ 1, 2 }, { dtype = "int32", device = dev })
        local h = cs.tensor({ 0.5, 0.25 }, { dtype = dtype, device = dev })
        assert.equal(dtype, (h + i32).dtype)
        assert.equal(dtype, (h * cs.tensor({ true, false }, { device = dev })).dtype)
        assert.equal("float32", (h + cs.tensor({ 1, 2 }, { device = dev })).dtype)
        assert.equal("float64", (h - cs.tensor({ 1, 2 }, { dtype = "float64", device = dev })).dtype)
        local other = dtype == "float16" and "bfloat16" or "float16"
        local mixed = h + cs.tensor({ 1 / 3, 1 / 3 }, { dtype = other, device = dev })
        assert.equal("float32", mixed.dtype)
        assert.same({ H.f32(0.5 + H.round_half(1 / 3, other)), H.f32(0.25 + H.round_half(1 / 3, other)) }, mixed:totable())
        assert.same({ false, true }, h:lt(cs.tensor({ 0.3, 0.3 }, { dtype = other, device = dev })):totable())
        assert.same({ 1.5, 0.25 }, cs.where(cs.tensor({ true, false }, { device = dev }), h + 1, h):totable())
      end
    end)
  end)

  it("reductions accumulate in double: overall ones give Lua numbers, along a dim the dtype rounded", function()
    H.with_rng("half reduce " .. dev, function(rng)
      for _, dtype in ipairs(HALVES) do
        local rows, cols = 7, 300
        local t = cs.tensor(H.build({ rows, cols }, function() return rng:uniform(0, 1) end), { dtype = dtype, device = dev })
        local v = t:totable()
        local total, big, small = 0, -inf, inf
        local row_sums = {}
        for i = 1, rows do
          local s = 0
          for j = 1, cols do
            s = s + v[i][j]
            big, small = math.max(big, v[i][j]), math.min(small, v[i][j])
          end
          row_sums[i] = s
          total = total + s
        end
        assert.is_true(math.abs(t:sum() - total) <= 1e-9 * total)
        assert.is_true(math.abs(t:mean() - total / (rows * cols)) <= 1e-9)
        assert.equal(big, t:max())
        assert.equal(small, t:min())
        local sums = t:sum(2)
        assert.equal(dtype, sums.dtype)
        local want = {}
        for i = 1, rows do want[i] = H.round_half(row_sums[i], dtype) end
        assert_values(want, sums:totable(), dtype .. " sum along dim 2", 1, dtype)
        assert.equal(dtype, t:max(1).dtype)
        assert.equal(dtype, t:mean(1).dtype)
      end
    end)
  end)

  it("allclose and the assertions take them, with torch's default tolerances for each", function()
    local want = { 1 / 3, 2 / 3, 1e4 / 3 }
    for _, case in ipairs({ { "float16", 1e-3 }, { "bfloat16", 1.6e-2 } }) do
      local dtype, rtol = case[1], case[2]
      local x = cs.tensor(want, { dtype = dtype, device = dev })
      assert.tensor_near(want, x)             -- the dtype's own rounding passes its default rtol
      assert.is_false(pcall(assert.tensor_near, { 1 / 3 * (1 + 3 * rtol), 2 / 3, 1e4 / 3 }, x))
      assert.is_true(cs.allclose(x, want, { rtol = rtol }))
      assert.is_false(cs.allclose(x, want, { rtol = 1e-6, atol = 0 }))
      assert.tensor_equal(x, x:to("float64"))
      assert.tensor_equal({ 0.0 }, cs.tensor({ -0.0 }, { dtype = dtype, device = dev }))
      assert.is_false(pcall(assert.tensor_equal, { 0.0 }, cs.tensor({ -0.0 }, { dtype = dtype, device = dev }), { strict = true }))
      assert.equal(math.abs(H.round_half(1 / 3, dtype) - 1 / 3), cs.max_abs_diff(x:narrow(1, 1, 1), { 1 / 3 }))
    end
  end)

  it("DLPack describes them as kDLFloat 16 and kDLBfloat 16 and takes them back without a copy", function()
    for _, case in ipairs({ { "float16", 2 }, { "bfloat16", 4 } }) do
      local dtype, code = case[1], case[2]
      local x = cs.tensor({ 1, -2.5, 1 / 3 }, { dtype = dtype, device = dev })
      local m = x:to_dlpack()
      assert.same({ code, 16, 1 }, { m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes })
      local y = cs.from_dlpack(m)
      assert.equal(dtype, y.dtype)
      assert.equal(x:data_ptr(), y:data_ptr())
      y:fill(7)
      assert.same({ 7, 7, 7 }, x:totable())
    end
  end)
end)

describe("a DLManagedTensor of 2-byte floats made outside cuscan", function()
  it("is read as the format its type code names", function()
    local bits = ffi.new("uint16_t[4]", { 0x3c00, 0xc000, 0x7c00, 0x0001 })
    local shape = ffi.new("int64_t[1]", { 4 })
    for _, case in ipairs({ { 2, "float16" }, { 4, "bfloat16" } }) do
      local m = ffi.new("DLManagedTensor")
      m.dl_tensor.data = bits
      m.dl_tensor.device.device_type = 1
      m.dl_tensor.ndim = 1
      m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes = case[1], 16, 1
      m.dl_tensor.shape = shape
      local t = cs.from_dlpack(m)
      assert.equal(case[2], t.dtype)
      local want = {}
      for i = 0, 3 do want[i + 1] = H.half_value(bits[i], case[2]) end
      assert.same(want, t:totable())
      t = nil
      collectgarbage()
    end
  end)
end)

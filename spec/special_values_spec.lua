-- Special values through scans: NaN and infinities propagate as IEEE arithmetic says, masked-out
-- NaN/Inf never reach the result, -0.0 is the identity of sums, denormals survive, integers wrap.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local nan, inf = 0 / 0, math.huge

local function is_nan(v) return v ~= v end
local function is_neg_zero(v) return v == 0 and 1 / v < 0 end
local function is_pos_zero(v) return v == 0 and 1 / v > 0 end

local layouts, first_line = H.line_layouts, H.first_line

H.each_device("special values", function(dev, it)
  for _, dtype in ipairs({ "float32", "float64" }) do
    it(dtype .. ": a NaN poisons the scan from its position on (inclusive, exclusive, reversed)", function()
      for _, l in ipairs(layouts({ 1, 2, nan, 4, 5 }, dev, dtype)) do
        local kind, x, d = l[1], l[2], l[3]
        local inc = first_line(x:cumsum(d), kind)
        assert.same({ 1, 3 }, { inc[1], inc[2] })
        for i = 3, 5 do assert.is_true(is_nan(inc[i]), kind) end
        local exc = first_line(x:cumsum(d, { exclusive = true }), kind)
        assert.same({ 0, 1, 3 }, { exc[1], exc[2], exc[3] })
        assert.is_true(is_nan(exc[4]) and is_nan(exc[5]), kind)
        local rev = first_line(x:cumprod(d, { reverse = true }), kind)
        assert.same({ 20, 5 }, { rev[4], rev[5] })
        for i = 1, 3 do assert.is_true(is_nan(rev[i]), kind) end
      end
    end)

    it(dtype .. ": infinities follow IEEE (inf - inf and inf * 0 are NaN)", function()
      local s = cs.tensor({ inf, 1, -inf, 2 }, { device = dev, dtype = dtype }):cumsum(1):totable()
      assert.same({ inf, inf }, { s[1], s[2] })
      assert.is_true(is_nan(s[3]) and is_nan(s[4]))
      local p = cs.tensor({ 2, inf, 0, 3 }, { device = dev, dtype = dtype }):cumprod(1):totable()
      assert.same({ 2, inf }, { p[1], p[2] })
      assert.is_true(is_nan(p[3]) and is_nan(p[4]))
      local n = cs.tensor({ -1, inf, 2 }, { device = dev, dtype = dtype }):cumprod(1):totable()
      assert.same({ -1, -inf, -inf }, n)
    end)

    it(dtype .. ": NaN and Inf under a false mask never reach the result", function()
      local values = { 1, nan, 2, inf, -inf, 3 }
      local mask = { true, false, true, false, false, true }
      for _, l in ipairs(layouts(values, dev, dtype)) do
        local kind, x, d = l[1], l[2], l[3]
        local m = cs.tensor(mask, { device = dev })
        if kind == "row" then m = m:reshape({ 1, 6 }) else m = m:reshape({ 6, 1 }) end
        if kind == "column of a wide tensor" then m = cs.cat({ m, m, m }, 2) end
        assert.same({ 1, 1, 3, 3, 3, 6 }, first_line(x:cumsum(d, { mask = m }), kind))
        assert.same({ 0, 1, 1, 3, 3, 3 }, first_line(x:cumsum(d, { mask = m, exclusive = true }), kind))
        assert.same({ 6, 5, 5, 3, 3, 3 }, first_line(x:cumsum(d, { mask = m, reverse = true }), kind))
        assert.same({ 1, 1, 2, 2, 2, 6 }, first_line(x:cumprod(d, { mask = m }), kind))
        assert.same({ 6, 6, 3, 3, 3, 1 }, first_line(x:cumprod(d, { mask = m, reverse = true, exclusive = true }), kind))
        -- unlike cumsum(x * mask), where Inf * 0 is NaN
        local product = first_line((x * m):cumsum(d), kind)
        assert.is_true(is_nan(product[#product]))
      end
    end)

    it(dtype .. ": -0.0 is the identity of sums; the empty prefix and masked-out elements read +0.0", function()
      local z = cs.tensor({ -0.0, -0.0, -0.0 }, { device = dev, dtype = dtype })
      for _, v in ipairs(z:cumsum(1):totable()) do assert.is_true(is_neg_zero(v)) end
      for _, v in ipairs(z:cumsum(1, { reverse = true }):totable()) do assert.is_true(is_neg_zero(v)) end
      -- exclusive: the first output is the empty prefix (+0.0), the later ones prefixes of -0.0
      local ex = z:cumsum(1, { exclusive = true }):totable()
      assert.is_true(is_pos_zero(ex[1]))
      assert.is_true(is_neg_zero(ex[2]) and is_neg_zero(ex[3]))
      local rex = z:cumsum(1, { exclusive = true, reverse = true }):totable()
      assert.is_true(is_pos_zero(rex[3]))
      assert.is_true(is_neg_zero(rex[1]) and is_neg_zero(rex[2]))
      -- -0.0 + x == x for every x, +0.0 included
      local mixed = cs.tensor({ -0.0, 0.0, -0.0 }, { device = dev, dtype = dtype }):cumsum(1):totable()
      assert.is_true(is_neg_zero(mixed[1]) and is_pos_zero(mixed[2]) and is_pos_zero(mixed[3]))
      -- a masked-out element reads +0.0, as cumsum(where(mask, x, 0)) does
      local m = cs.tensor({ false, true, false }, { device = dev })
      local ms = z:cumsum(1, { mask = m }):totable()
      assert.is_true(is_pos_zero(ms[1]) and is_pos_zero(ms[2]) and is_pos_zero(ms[3]))
      local lead = cs.tensor({ -0.0, -0.0 }, { device = dev, dtype = dtype }):cumsum(1, { mask = cs.tensor({ true, false }, { device = dev }) }):totable()
      assert.is_true(is_neg_zero(lead[1]) and is_pos_zero(lead[2]))
      local p = cs.tensor({ -0.0, 2, 3 }, { device = dev, dtype = dtype }):cumprod(1):totable()
      for _, v in ipairs(p) do assert.is_true(is_neg_zero(v)) end
      local q = cs.tensor({ -1, 0 }, { device = dev, dtype = dtype }):cumprod(1):totable()
      assert.is_true(is_neg_zero(q[2]))
      local masked = cs.tensor({ -0.0, 5 }, { device = dev, dtype = dtype }):cumprod(1, { mask = cs.tensor({ false, true }, { device = dev }) }):totable()
      assert.same({ 1, 5 }, masked)
    end)

    it(dtype .. ": denormals are neither flushed nor lost", function()
      local tiny = dtype == "float32" and 2 ^ -149 or 2 ^ -1074
      local s = cs.tensor({ tiny, tiny, tiny }, { device = dev, dtype = dtype }):cumsum(1):totable()
      assert.same({ tiny, 2 * tiny, 3 * tiny }, s)
      local small = dtype == "float32" and 2 ^ -70 or 2 ^ -520  -- the product is a denormal
      local p = cs.tensor({ small, small }, { device = dev, dtype = dtype }):cumprod(1):totable()
      assert.equal(small * small, p[2])
      assert.is_true(p[2] > 0)
    end)
  end

  it("int32 sums and products wrap around as two's complement", function()
    local s = cs.tensor({ 2147483647, 1, 1 }, { dtype = "int32", device = dev }):cumsum(1)
    assert.same({ 2147483647, -2147483648, -2147483647 }, s:totable())
    local wide = cs.tensor({ 2147483647, 1, 1 }, { dtype = "int32", device = dev }):cumsum(1, { dtype = "int64" })
    assert.same({ 2147483647, 2147483648, 2147483649 }, wide:totable())
    local p = cs.tensor({ 65536, 65536, 3 }, { dtype = "int32", device = dev }):cumprod(1)
    assert.same({ 65536, 0, 0 }, p:totable())
    local threes = {}
    for i = 1, 40 do threes[i] = 3 end
    local t = cs.tensor(threes, { dtype = "int32", device = dev })
    H.assert_int_equal(H.scan_ref(threes, 1, { op = "prod", dtype = "int32" }), t:cumprod(1))
    H.assert_int_equal(H.scan_ref(threes, 1, { op = "prod", dtype = "int64" }), t:cumprod(1, { dtype = "int64" }))
  end)

  it("int64 sums and products wrap around as two's complement", function()
    local x = cs.tensor({ 0x7fffffffffffffffLL, 1LL, 1LL }, { dtype = "int64", device = dev })
    H.assert_int_equal({ 0x7fffffffffffffffLL, -0x8000000000000000LL, -0x7fffffffffffffffLL }, x:cumsum(1))
    local p = cs.tensor({ 2 ^ 32, 2 ^ 32, 5 }, { dtype = "int64", device = dev }):cumprod(1)
    H.assert_int_equal({ 4294967296LL, 0LL, 0LL }, p)
    local threes = {}
    for i = 1, 60 do threes[i] = 3 end
    H.assert_int_equal(H.scan_ref(threes, 1, { op = "prod", dtype = "int64", reverse = true }),
                       cs.tensor(threes, { dtype = "int64", device = dev }):cumprod(1, { reverse = true }))
  end)

  it("bool sums count the true elements, into int64 or int32", function()
    local b = cs.tensor({ true, false, true, true }, { device = dev })
    local s = b:cumsum(1)
    assert.equal("int64", s.dtype)
    assert.same({ 1, 1, 2, 3 }, s:totable())
    assert.same({ 3, 2, 2, 1 }, b:cumsum(1, { reverse = true, dtype = "int32" }):totable())
    assert.equal("int32", b:cumsum(1, { dtype = "int32" }).dtype)
  end)
end)

describe("reading NaNs of any payload", function()
  local ffi = require("ffi")
  local core = require("cuscan.core")
  local C = core.C

  -- a CPU tensor whose elements hold the given bit patterns
  local function with_bits(dtype, patterns)
    local t = cs.zeros({ #patterns }, { dtype = dtype, device = "cpu" })
    local p = ffi.cast(dtype == "float32" and "uint32_t *" or "uint64_t *", C.cs_tensor_host_data(core.check_tensor(t, "with_bits", "t")))
    for i, b in ipairs(patterns) do p[i - 1] = b end
    return t
  end

  it("gives Lua numbers (NaN) for every NaN bit pattern, in totable, item and printing", function()
    local cases = {
      float32 = { 0xffffffff, 0x7fffffff, 0xffc00000, 0x7fc00000, 0xffe00001, 0xff800001 },
      float64 = { 0xffffffffffffffffULL, 0x7fffffffffffffffULL, 0xfff8000000000000ULL, 0xfffc000000000001ULL,
                  0xfff0000000000001ULL },
    }
    for dtype, patterns in pairs(cases) do
      local t = with_bits(dtype, patterns)
      for _ = 1, 300 do  -- long enough for the reads to be compiled
        local vs = t:totable()
        for i = 1, #patterns do
          assert.is_true(type(vs[i]) == "number" and vs[i] ~= vs[i], dtype .. " element " .. i)
        end
      end
      for i = 1, #patterns do
        local v = t:narrow(1, i, 1):item()
        assert.is_true(type(v) == "number" and v ~= v)
      end
      assert.matches("nan", tostring(t), 1, true)
      assert.is_true(t:sum() ~= t:sum())
      local c = t:cumsum(1):totable()
      for i = 1, #patterns do assert.is_true(c[i] ~= c[i]) end
    end
  end)
end)

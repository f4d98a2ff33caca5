-- Issue 12's findings, one spec each, with the issue's own examples: plain Lua that crashed the
-- process, float32 scans computed two ways, a sum of -0.0, values out of an integer dtype's range,
-- shapes that overflow int64, options that contradicted their method or meant nothing. (Finding
-- 2's contract is spec/float_contract_spec.lua's on every layout; finding 1's, the misuse walk of
-- spec/no_crash_spec.lua.)
local ffi = require("ffi")
local H = require("spec.helpers")
local cs = require("cuscan")
local core = require("cuscan.core")
require("cuscan.assertions")

local C = core.C
local inf = math.huge

-- Calls fn (a one-line closure); its error must carry the cuscan: prefix and every needle.
local function raises(fn, needles)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  err = tostring(err)
  assert.is_truthy(err:find("cuscan: ", 1, true), err)
  for _, needle in ipairs(needles or {}) do
    assert.is_truthy(err:find(needle, 1, true), ("the error should mention %q: %q"):format(needle, err))
  end
  return err
end

describe("issue 12, finding 1: plain Lua crashed the process", function()
  it("each of the issue's lines raises a cuscan: error and the process lives on", function()
    -- in a child process, so that a crash fails this spec instead of ending the suite
    local chunk = [[
      local cs = require("cuscan")
      local cases = {
        function() local x = cs.tensor{1,2}; x.h = nil; x:cumsum(1) end,
        function() local x = cs.tensor{1,2}; setmetatable({}, getmetatable(x)):cumsum(1) end,
        function() local e = cs.event(); e.record() end,
        function() local e, f = cs.event(), cs.event(); e.elapsed(nil, f) end,
        function() local x = cs.tensor{1,2}; local y = cs.tensor{3}; x.cumsum(y.h, 1) end,
        function() local e = require("ffi").new("cs_event *"); cs.event().elapsed(cs.event():record(), e) end,
      }
      for i, case in ipairs(cases) do
        local ok, err = pcall(case)
        io.write(i, " ", tostring(ok), " ", tostring(err):match("cuscan: .*") or tostring(err), "\n")
      end
      io.write("alive\n")
    ]]
    local out, status = H.run_lua(chunk)
    assert.equal(0, status, out)
    assert.matches("alive\n$", out)
    local n = 0
    for line in out:gmatch("[^\n]+") do
      if line ~= "alive" then
        n = n + 1
        assert.matches("^%d+ false cuscan: ", line)
      end
    end
    assert.equal(6, n)
    assert.matches("1 false cuscan: tensor: cannot set field", out, 1, true)
    assert.matches("2 false cuscan: cumsum: x: expected a tensor, got a table", out, 1, true)
    assert.matches("3 false cuscan: record: e: expected an event", out, 1, true)
    assert.matches("4 false cuscan: elapsed: e: expected an event", out, 1, true)
    assert.matches("6 false cuscan: elapsed: later: expected an event", out, 1, true)
  end)

  it("a tensor's handle cannot be read, set or forged", function()
    local x = cs.tensor({ 1, 2 })
    assert.is_nil(x.h)
    raises(function() x.h = nil end, { "cannot set field" })
    assert.is_false(pcall(rawset, x, "h", false))
    assert.is_false(cs.is_tensor(newproxy(x)))
    raises(function() return cs.cumsum(newproxy(x), 1) end, { "cumsum: x: expected a tensor" })
    raises(function() return cs.cumsum(ffi.new("cs_tensor *"), 1) end, { "cumsum: x: expected a tensor" })
    assert.same({ 1, 3 }, x:cumsum(1):totable())
  end)
end)

H.each_device("issue 12, finding 2: float32 scans round the float64 prefix once", function(dev, it)
  it("{3e38, 3e38, -3e38} gives 3e38, inf, 3e38 and cumprod of {1e-38, 1e-5, 1e5} the double product", function()
    assert.same({ H.f32(3e38), inf, H.f32(3e38) }, cs.tensor({ 3e38, 3e38, -3e38 }, { device = dev }):cumsum(1):totable())
    local p = cs.tensor({ 1e-38, 1e-5, 1e5 }, { device = dev }):cumprod(1):totable()
    assert.equal(H.f32(H.f32(1e-38) * H.f32(1e-5) * H.f32(1e5)), p[3])
    assert.is_true(math.abs(p[3] - 9.9999994e-39) < 1e-45)
  end)
end)

H.each_device("issue 12, finding 3: a sum of only -0.0", function(dev, it)
  it("is -0.0, and assert.tensor_equal tells the signs of zeros apart when strict", function()
    assert.equal(-inf, 1 / cs.tensor({ -0.0, -0.0 }, { device = dev }):cumsum(1):totable()[2])
    assert.tensor_equal({ -0.0 }, cs.tensor({ 0.0 }, { device = dev }))
    assert.is_false(pcall(function() assert.tensor_equal({ -0.0 }, cs.tensor({ 0.0 }, { device = dev }), { strict = true }) end))
    assert.tensor_equal({ -0.0 }, cs.tensor({ -0.0 }, { device = dev }), { strict = true })
  end)
end)

H.each_device("issue 12, finding 4: values out of an integer dtype's range", function(dev, it)
  local function I32(v) return cs.tensor(v, { dtype = "int32", device = dev }) end

  it("are cuscan: errors wherever a number becomes an element", function()
    raises(function() return cs.full({ 2 }, 1e20, { dtype = "int32", device = dev }) end, { "full: value: 1e+20 is out of range for int32" })
    raises(function() return cs.full({ 2 }, 2 ^ 40, { dtype = "int32", device = dev }) end, { "full: value: 1099511627776 is out of range for int32" })
    raises(function() return cs.zeros({ 2 }, { dtype = "int32", device = dev }):fill(2 ^ 31) end, { "fill: value: 2147483648 is out of range" })
    raises(function() return cs.arange(0, 2 ^ 70, 2 ^ 64, { dtype = "int64", device = dev }) end, { "arange: step", "out of range for int64" })
    raises(function() return cs.arange(2 ^ 31 - 2, 2 ^ 31 + 2, { dtype = "int32", device = dev }) end, { "arange: last element: 2147483649 is out of range for int32" })
    raises(function() return cs.tensor({ 2 ^ 63 }, { dtype = "int64", device = dev }) end, { "tensor: data", "out of range for int64" })
    raises(function() return cs.tensor({ 1, 0 / 0 }, { dtype = "int64", device = dev }) end, { "NaN cannot be stored in int64" })
    raises(function() return cs.full({ 1 }, -inf, { dtype = "int64", device = dev }) end, { "-inf cannot be stored in int64" })
    raises(function() return I32({ 1 }) + 2 ^ 40 end, { "add: b: 1099511627776 is out of range for int32" })
    raises(function() return I32({ 1 }):maximum(-2 ^ 31 - 1) end, { "maximum: b: -2147483649 is out of range" })
    raises(function() return 2 ^ 63 * I32({ 1 }) end, { "mul: a:", "out of range for int32" })
    raises(function() local x = I32({ 1 }); x[1] = 2 ^ 31 end, { "x[i] = v: v: 2147483648 is out of range" })
    raises(function() return cs.full({ 1 }, 0xffffffffffffffffULL, { dtype = "int64", device = dev }) end, { "out of range for int64" })
    -- fractions keep truncating toward zero, at the very ends of the range too
    assert.same({ 2147483647, -2147483648 }, I32({ 2147483647.9, -2147483648.9 }):totable())
    assert.same({ -2, 2 }, cs.full({ 2 }, 2.7, { dtype = "int32", device = dev }):mul(I32({ -1, 1 })):totable())
    -- a fractional, infinite or NaN number in arithmetic gives float32, as NumPy and PyTorch give a float
    assert.equal("float32", (I32({ 1 }) + 0.5).dtype)
    assert.same({ inf }, (I32({ 1 }) + inf):totable())
  end)

  it("x:to() saturates: values beyond the target's range become its ends, NaN becomes 0", function()
    local f = cs.tensor({ 1e20, -1e20, 0 / 0, -2.9, 2.9, inf, -inf }, { dtype = "float64", device = dev })
    assert.same({ 2147483647, -2147483648, 0, -2, 2, 2147483647, -2147483648 }, f:to("int32"):totable())
    H.assert_int_equal({ 0x7fffffffffffffffLL, -0x8000000000000000LL, 0LL, -2LL, 2LL, 0x7fffffffffffffffLL, -0x8000000000000000LL },
                       f:to("int64"))
    local big = cs.tensor({ 2 ^ 40, -2 ^ 40, 0x7fffffffffffffffLL, 5 }, { dtype = "int64", device = dev })
    assert.same({ 2147483647, -2147483648, 2147483647, 5 }, big:to("int32"):totable())
    assert.same({ 2147483647, -2147483648, 2147483647, 5 }, I32({ 0, 0, 0, 0 }):copy(big):totable())
  end)

  it("the C API refuses them with CS_ERR_ARGUMENT and leaves the tensor as it was", function()
    local t = I32({ 7, 7 })
    local th = core.check_tensor(t, "spec", "t")
    local ARG = tonumber(C.CS_ERR_ARGUMENT)
    assert.equal(ARG, tonumber(C.cs_fill(th, 1e20)))
    assert.equal(ARG, tonumber(C.cs_fill(th, 0 / 0)))
    assert.equal(ARG, tonumber(C.cs_fill_int64(th, 2 ^ 40)))
    assert.equal(ARG, tonumber(C.cs_arange(th, 2 ^ 31 - 1, 1)))
    assert.equal(ARG, tonumber(C.cs_arange(th, 0, 2 ^ 64)))
    local out = I32({ 0, 0 })
    assert.equal(ARG, tonumber(C.cs_binary_scalar(core.check_tensor(out, "spec", "out"), th, 2 ^ 40, C.CS_ADD, 0)))
    assert.matches("out of range for int32", ffi.string(C.cs_last_error()), 1, true)
    assert.same({ 7, 7 }, t:totable())
    assert.same({ 0, 0 }, out:totable())
    assert.equal(0, tonumber(C.cs_fill(th, -2147483648.5)))
    assert.same({ -2147483648, -2147483648 }, t:totable())
  end)
end)

describe("issue 12, finding 5: shapes that overflow int64", function()
  it("are refused before anything else, and sizes print in full", function()
    raises(function() return cs.zeros({ 2 ^ 63, 0 }) end, { "zeros: shape[1]: 9223372036854775808 does not fit in int64" })
    local e = cs.zeros({ 0 }, { device = "cpu" })
    raises(function() return e:reshape({ 2 ^ 64, 0 }) end, { "reshape: shape[1]: 18446744073709551616 does not fit in int64" })
    raises(function() return e:reshape({ 2 ^ 62, 4, 0 }) end, { "has more elements than int64 can count" })
    raises(function() return e:reshape({ -1, 2 ^ 63 }) end, { "does not fit in int64" })
    local big = e:reshape({ 2 ^ 53, 0 })
    assert.same({ 2 ^ 53, 0 }, big:shape())
    assert.matches("[cuscan float32 tensor 9007199254740992x0, cpu]", tostring(big), 1, true)
    -- the C core holds the same rule
    local out = ffi.new("cs_tensor *[1]")
    local shape = ffi.new("int64_t[3]", { 0x4000000000000000LL, 4, 0 })
    assert.equal(tonumber(C.CS_ERR_ARGUMENT), tonumber(C.cs_empty(out, 3, shape, C.CS_FLOAT32, C.CS_CPU)))
  end)
end)

describe("issue 12, finding 6: options that contradicted their method or meant nothing", function()
  local x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  local m = x:gt(2)

  it("are cuscan: errors", function()
    raises(function() return x:reverse_cumsum(2, { reverse = false }) end, { "reverse_cumsum: opts: reverse = false contradicts reverse_cumsum" })
    raises(function() return x:masked_cumsum(m, 2, { mask = x:gt(4) }) end, { "masked_cumsum: opts: mask = a tensor contradicts masked_cumsum" })
    raises(function() return cs.allclose(x, x, { rtol = 0 / 0 }) end, { "allclose: rtol: expected a non-negative number, got number nan" })
    raises(function() return cs.allclose(x, x, { atol = 0 / 0 }) end, { "allclose: atol" })
    local e0, e1 = cs.event("cpu"), cs.event("cpu")
    raises(function() return e0:elapsed(e1) end, { "elapsed: the start event was never recorded" })
    e0:record()
    raises(function() return e0:elapsed(e1) end, { "elapsed: the end event was never recorded" })
    raises(function() return x:to("complex64") end, { "to: dtype: expected a dtype", "complex64" })
    raises(function() return x:cumsum(1, { dtype = "float8" }) end, { "cumsum: dtype: expected a dtype" })
    raises(function() return cs.zeros({ 2 }, { dtype = "float8" }) end, { "zeros: dtype: expected a dtype" })
    -- what agrees with the method stays allowed
    assert.same(x:reverse_cumsum(2):totable(), x:reverse_cumsum(2, { reverse = true }):totable())
    assert.same({ { 0, 0, 3 }, { 4, 9, 15 } }, x:masked_cumsum(m, 2):totable())
    assert.is_true(cs.allclose(x, x, { rtol = 0, atol = inf }))
    assert.is_number(e1:record() and e0:elapsed(e1))
  end)
end)

H.each_device("issue 12, finding 6: elapsed time of an unrecorded event", function(dev, it)
  it("is an error, where it was 0 ms (CPU) or a bare invalid handle (CUDA)", function()
    local e0, e1 = cs.event(dev), cs.event(dev)
    raises(function() return e0:elapsed(e1) end, { "elapsed: the start event was never recorded" })
    e0:record()
    raises(function() return e0:elapsed(e1) end, { "elapsed: the end event was never recorded" })
    e1:record()
    assert.is_true(e0:elapsed(e1) >= 0)
  end)
end)

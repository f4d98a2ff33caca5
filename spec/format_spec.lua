-- tostring(x): values, then "[cuscan <dtype> tensor <shape>, <device>]"; large tensors abbreviated.
local H = require("spec.helpers")
local cs = require("cuscan")

local function lines(s)
  local out = {}
  for l in (s .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

H.each_device("printing", function(dev, it)
  it("ends with a line naming dtype, shape and device", function()
    local s = tostring(cs.zeros({ 2, 3 }, { device = dev }))
    local ls = lines(s)
    assert.equal(("[cuscan float32 tensor 2x3, %s]"):format(H.printed_device(dev)), ls[#ls])
    assert.equal(("[cuscan int64 tensor 4, %s]"):format(H.printed_device(dev)), lines(tostring(cs.zeros({ 4 }, { dtype = "int64", device = dev })))[2])
  end)

  it("shows every value of a small tensor in nested brackets", function()
    local s = tostring(cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev }))
    assert.equal("[[1., 2., 3.],\n [4., 5., 6.]]\n[cuscan float32 tensor 2x3, " .. H.printed_device(dev) .. "]", s)
    local i = tostring(cs.tensor({ -12, 3 }, { dtype = "int32", device = dev }))
    assert.equal("[-12,   3]\n[cuscan int32 tensor 2, " .. H.printed_device(dev) .. "]", i)
  end)

  it("prints bools as true and false", function()
    local s = tostring(cs.tensor({ true, false }, { device = dev }))
    assert.equal("[ true, false]\n[cuscan bool tensor 2, " .. H.printed_device(dev) .. "]", s)
  end)

  it("prints floats in a common format, with nan, inf and -0", function()
    local s = tostring(cs.tensor({ 0.5, -0.25, 1 / 3 }, { device = dev }))
    assert.equal("[ 0.5000, -0.2500,  0.3333]", lines(s)[1])
    local special = lines(tostring(cs.tensor({ 0 / 0, math.huge, -math.huge, 1.5 }, { device = dev, dtype = "float64" })))[1]
    assert.matches("nan", special, 1, true)
    assert.matches(" inf", special, 1, true)
    assert.matches("-inf", special, 1, true)
    assert.matches("1.5000", special, 1, true)
    local big = lines(tostring(cs.tensor({ 1e10, 1 }, { device = dev, dtype = "float64" })))[1]
    assert.matches("1.0000e+10", big, 1, true)
    assert.matches("-0.", lines(tostring(cs.tensor({ -0.0 }, { device = dev })))[1], 1, true)
  end)

  it("prints 0-d and empty tensors", function()
    assert.equal("2.5000\n[cuscan float32 tensor scalar, " .. H.printed_device(dev) .. "]", tostring(cs.tensor(2.5, { device = dev })))
    assert.equal("[]\n[cuscan float32 tensor 0x3, " .. H.printed_device(dev) .. "]", tostring(cs.zeros({ 0, 3 }, { device = dev })))
  end)

  it("separates the blocks of a 3-D tensor with a blank line", function()
    local s = tostring(cs.arange(8, { device = dev, dtype = "int32" }):reshape({ 2, 2, 2 }))
    assert.equal("[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]", s:match("^(.-)\n%[cuscan"))
  end)

  it("abbreviates large tensors with ... and shows the corners exactly", function()
    local x = cs.arange(2000 * 3000, { device = dev, dtype = "int64" }):reshape({ 2000, 3000 })
    local s = tostring(x)
    local ls = lines(s)
    assert.equal("[cuscan int64 tensor 2000x3000, " .. H.printed_device(dev) .. "]", ls[#ls])
    assert.is_true(#ls <= 9, "a summary, not 2000 rows")
    assert.matches("^%[%[ *0, +1, +2, +%.%.%., +2997, +2998, +2999%],", ls[1])
    assert.equal(" ...,", ls[4])
    assert.matches("5999999%]%]$", ls[7])
    assert.matches("5997000", ls[7], 1, true)
    -- small tensors are not abbreviated even with long dims
    assert.is_nil(tostring(cs.zeros({ 10 }, { device = dev })):find("...", 1, true))
  end)

  it("wraps long rows", function()
    local s = tostring(cs.arange(100, { device = dev }))
    for _, l in ipairs(lines(s)) do assert.is_true(#l <= 80, l) end
    assert.matches("99.]", s, 1, true)
  end)

  it("says when a tensor was freed", function()
    local x = cs.zeros({ 2 }, { device = dev })
    x:free()
    assert.equal("[cuscan float32 tensor 2, " .. H.printed_device(dev) .. ", freed]", tostring(x))
  end)
end)

H.each_device("printing values exactly", function(dev, it)
  after_each(function() cs.set_printoptions({ profile = "default" }) end)

  it("shows float64 values with the digits that tell them apart", function()
    local s = lines(tostring(cs.tensor({ 0.1 + 0.2, 0.5 }, { dtype = "float64", device = dev })))[1]
    assert.equal("[0.30000000000000004, 0.50000000000000000]", s)
    assert.is_nil(s:find("0.3000,", 1, true))
    -- neighbouring doubles never print alike, whatever their magnitude
    H.with_rng("print neighbours " .. dev, function(rng)
      local box = require("ffi").new("union { double d; int64_t i; }")
      for _ = 1, 50 do
        local v = rng:uniform(-1, 1) * 10 ^ rng:int(-12, 12)
        box.d = v
        box.i = box.i + 1
        local w = box.d
        local strs = lines(tostring(cs.tensor({ v, w }, { dtype = "float64", device = dev })))[1]
        local a, b = strs:match("^%[%s*(%S+),%s*(%S+)%]$")
        assert.are_not.equal(a, b, strs)
        assert.equal(v, tonumber(a))
        assert.equal(w, tonumber(b))
      end
    end)
    -- float64 values that 4 digits show exactly keep 4 digits; float32 keeps 4 always
    assert.equal("[ 0.5000, -0.2500]", lines(tostring(cs.tensor({ 0.5, -0.25 }, { dtype = "float64", device = dev })))[1])
    assert.equal("[0.3000]", lines(tostring(cs.tensor({ 0.1 + 0.2 }, { device = dev })))[1])
    assert.equal("[1.000000000000001e+10]", lines(tostring(cs.tensor({ 1e10 + 1e-5 }, { dtype = "float64", device = dev })))[1])
  end)

  it("shows int64 values exactly, beyond 2^53", function()
    local x = cs.tensor({ 9007199254740993LL, -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL }, { dtype = "int64", device = dev })
    assert.equal("[    9007199254740993, -9223372036854775808,  9223372036854775807]", lines(tostring(x))[1])
    local big = cs.full({ 3000 }, 9007199254740993LL, { dtype = "int64", device = dev })
    assert.matches("9007199254740993, ", tostring(big), 1, true)
  end)

  it("cs.set_printoptions sets precision, threshold, edgeitems, linewidth and sci_mode as torch does", function()
    local f64 = cs.tensor({ 0.1 + 0.2, 1 / 3 }, { dtype = "float64", device = dev })
    local f32 = cs.tensor({ 0.5, 1 / 3 }, { device = dev })
    cs.set_printoptions({ precision = 2 })
    assert.equal("[0.30, 0.33]", lines(tostring(f64))[1])
    assert.equal("[0.50, 0.33]", lines(tostring(f32))[1])
    -- values exactly halfway round to even, as C's printf, NumPy and PyTorch round them
    cs.set_printoptions({ precision = 0 })
    assert.equal("[ 0,  2,  2, -2,  3, -0]", lines(tostring(cs.tensor({ 0.5, 1.5, 2.5, -2.5, 3.25, -0.5 }, { device = dev })))[1])
    cs.set_printoptions({ precision = 1 })
    assert.equal("[ 0.2,  0.1, -0.8,  0.4]", lines(tostring(cs.tensor({ 0.25, 0.125, -0.75, 0.375 }, { device = dev })))[1])
    cs.set_printoptions({ precision = 1, sci_mode = true })
    assert.equal("[2.5e-01, 1.2e+10, 9.8e+00]", lines(tostring(cs.tensor({ 0.25, 1.25e10, 9.75 }, { dtype = "float64", device = dev })))[1])
    cs.set_printoptions({ precision = 6, sci_mode = true })
    assert.equal("[5.000000e-01, 3.333333e-01]", lines(tostring(f32))[1])
    cs.set_printoptions({ precision = 6 })   -- sci_mode not named: automatic again
    assert.equal("[0.500000, 0.333333]", lines(tostring(f32))[1])
    cs.set_printoptions({ sci_mode = false })
    assert.equal("[10000000000.000000,           0.500000]", lines(tostring(cs.tensor({ 1e10, 0.5 }, { dtype = "float64", device = dev })))[1])
    assert.equal("[10000000000.,           1.]", lines(tostring(cs.tensor({ 1e10, 1 }, { dtype = "float64", device = dev })))[1])
    cs.set_printoptions({ profile = "default", threshold = 10, edgeitems = 2 })
    assert.equal("[ 0.,  1., ..., 10., 11.]", lines(tostring(cs.arange(12, { device = dev })))[1])
    assert.equal("[0., 1., 2., 3., 4., 5., 6., 7., 8., 9.]", lines(tostring(cs.arange(10, { device = dev })))[1])
    cs.set_printoptions({ threshold = math.huge })
    assert.is_nil(tostring(cs.arange(2000, { device = dev })):find("...", 1, true))
    cs.set_printoptions({ profile = "full" })
    assert.is_nil(tostring(cs.arange(2000, { device = dev })):find("...", 1, true))
    cs.set_printoptions({ profile = "default", linewidth = 30 })
    local ls = lines(tostring(cs.arange(40, { device = dev })))
    assert.is_true(#ls > 3)
    for i = 1, #ls - 1 do assert.is_true(#ls[i] <= 30, ls[i]) end
    cs.set_printoptions({ profile = "short" })
    assert.equal("[0.50, 0.33]", lines(tostring(f32))[1])
    assert.equal("[[ 0.,  1., ..., 98., 99.],", lines(tostring(cs.arange(2000, { device = dev }):narrow(1, 1, 100):expand(20, 100)))[1])
    cs.set_printoptions({ profile = "default" })
    assert.equal("[0.5000, 0.3333]", lines(tostring(f32))[1])
    assert.equal("[0.30000000000000004, 0.33333333333333331]", lines(tostring(f64))[1])
  end)

  it("cs.set_printoptions refuses bad settings and then changes none", function()
    cs.set_printoptions({ precision = 3 })
    local x = cs.tensor({ 0.5 }, { device = dev })
    H.raises(function() cs.set_printoptions({ precision = -1 }) end, { "set_printoptions: precision: expected an integer >= 0 and <= 99, got number -1" })
    H.raises(function() cs.set_printoptions({ precision = 100 }) end, { "set_printoptions: precision: expected an integer >= 0 and <= 99" })
    H.raises(function() cs.set_printoptions({ precision = 2, edgeitems = 0 }) end, { "set_printoptions: edgeitems: expected an integer >= 1" })
    H.raises(function() cs.set_printoptions({ linewidth = 1.5 }) end, { "set_printoptions: linewidth: expected an integer >= 1" })
    H.raises(function() cs.set_printoptions({ threshold = -5 }) end, { "set_printoptions: threshold: expected an integer >= 0" })
    H.raises(function() cs.set_printoptions({ sci_mode = "yes" }) end, { "set_printoptions: sci_mode: expected a boolean" })
    H.raises(function() cs.set_printoptions({ profile = "long" }) end, { "set_printoptions: profile: expected \"default\", \"short\" or \"full\"" })
    H.raises(function() cs.set_printoptions({ precison = 2 }) end, { "set_printoptions: opts: unknown option 'precison'" })
    H.raises(function() cs.set_printoptions(3) end, { "set_printoptions: opts: expected a table of options" })
    assert.equal("[0.500]", lines(tostring(x))[1])
  end)
end)

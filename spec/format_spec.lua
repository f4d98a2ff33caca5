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
    assert.equal(("[cuscan float32 tensor 2x3, %s]"):format(dev), ls[#ls])
    assert.equal(("[cuscan int64 tensor 4, %s]"):format(dev), lines(tostring(cs.zeros({ 4 }, { dtype = "int64", device = dev })))[2])
  end)

  it("shows every value of a small tensor in nested brackets", function()
    local s = tostring(cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev }))
    assert.equal("[[1., 2., 3.],\n [4., 5., 6.]]\n[cuscan float32 tensor 2x3, " .. dev .. "]", s)
    local i = tostring(cs.tensor({ -12, 3 }, { dtype = "int32", device = dev }))
    assert.equal("[-12,   3]\n[cuscan int32 tensor 2, " .. dev .. "]", i)
  end)

  it("prints bools as true and false", function()
    local s = tostring(cs.tensor({ true, false }, { device = dev }))
    assert.equal("[ true, false]\n[cuscan bool tensor 2, " .. dev .. "]", s)
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
    assert.equal("2.5000\n[cuscan float32 tensor scalar, " .. dev .. "]", tostring(cs.tensor(2.5, { device = dev })))
    assert.equal("[]\n[cuscan float32 tensor 0x3, " .. dev .. "]", tostring(cs.zeros({ 0, 3 }, { device = dev })))
  end)

  it("separates the blocks of a 3-D tensor with a blank line", function()
    local s = tostring(cs.arange(8, { device = dev, dtype = "int32" }):reshape({ 2, 2, 2 }))
    assert.equal("[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]", s:match("^(.-)\n%[cuscan"))
  end)

  it("abbreviates large tensors with ... and shows the corners exactly", function()
    local x = cs.arange(2000 * 3000, { device = dev, dtype = "int64" }):reshape({ 2000, 3000 })
    local s = tostring(x)
    local ls = lines(s)
    assert.equal("[cuscan int64 tensor 2000x3000, " .. dev .. "]", ls[#ls])
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
    assert.equal("[cuscan float32 tensor 2, " .. dev .. ", freed]", tostring(x))
  end)
end)

-- The busted helpers of require("cuscan.assertions"): they pass on agreeing tensors and fail,
-- with a message that locates the difference, on disagreeing ones.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

-- The failure message of an assertion call, or nil when it passed.
local function failure(fn)
  local ok, err = pcall(fn)
  if ok then return nil end
  if type(err) == "table" and err.message then return tostring(err.message) end
  return tostring(err)
end

H.each_device("assert.tensor_near", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt }) end

  it("passes on equal and nearly equal values, tables or tensors as expected", function()
    local x = T({ { 1, 2 }, { 3, 4 } })
    assert.tensor_near({ { 1, 2 }, { 3, 4 } }, x)
    assert.tensor_near(x, x:clone())
    assert.tensor_near({ { 1 + 1e-6, 2 }, { 3, 4 } }, x)
    assert.tensor_near({ { 1.05, 2 }, { 3, 4 } }, x, 0.1)
    assert.tensor_near({ { 1.05, 2 }, { 3, 4 } }, x, 0, 0.06)
    assert.tensor_near(2.5, T(2.5))
    assert.tensor_near({ 0 / 0, math.huge }, T({ 0 / 0, math.huge }))
    assert.tensor_near(x:to("float64"), x)
    assert.tensor_near({ 1, 2 }, T({ 1, 2 }, "int32"))
  end)

  it("fails on a difference, naming the first index, the values and the largest errors", function()
    local x = T({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64")
    local msg = failure(function() assert.tensor_near({ { 1, 2, 3 }, { 4, 5.5, 7 } }, x) end)
    assert.is_string(msg)
    assert.matches("2 of 6 elements differ", msg, 1, true)
    assert.matches("first at [2][2]: expected 5.5, actual 5", msg, 1, true)
    assert.matches("max abs error 1", msg, 1, true)
    assert.matches("max rel error 0.142857", msg, 1, true)
  end)

  it("fails on NaN against a number and on infinities of either sign", function()
    assert.is_string(failure(function() assert.tensor_near({ 1, 2 }, T({ 1, 0 / 0 })) end))
    assert.is_string(failure(function() assert.tensor_near({ 1, math.huge }, T({ 1, -math.huge }), 1) end))
    assert.is_string(failure(function() assert.tensor_near({ 1, math.huge }, T({ 1, 3e38 }), 1) end))
  end)

  it("fails on a shape difference and on bools against numbers", function()
    local msg = failure(function() assert.tensor_near({ 1, 2, 3 }, T({ { 1, 2, 3 } })) end)
    assert.matches("shapes differ: expected 3, actual 1x3", msg, 1, true)
    msg = failure(function() assert.tensor_near({ 1, 0 }, T({ true, false })) end)
    assert.matches("dtypes are not compatible", msg, 1, true)
    assert.is_string(failure(function() assert.tensor_near({ 1 }, { 1 }) end))
  end)

  it("uses tolerances that follow the actual dtype", function()
    assert.tensor_near({ 1 + 5e-6 }, T({ 1 }))                                       -- float32: rtol 1e-5
    assert.is_string(failure(function() assert.tensor_near({ 1 + 5e-6 }, T({ 1 }, "float64")) end))
    assert.is_string(failure(function() assert.tensor_near({ 1.5 }, T({ 1 }, "int32")) end))
  end)

  it("can be negated", function()
    assert.is_not.tensor_near({ 1, 3 }, T({ 1, 2 }))
    assert.is_string(failure(function() assert.is_not.tensor_near({ 1, 2 }, T({ 1, 2 })) end))
  end)

  it("accepts {} for an empty tensor of any shape", function()
    assert.tensor_near({}, cs.zeros({ 0, 3 }, { device = dev }))
    assert.tensor_near({ {}, {} }, cs.zeros({ 2, 0 }, { device = dev }))
    assert.is_string(failure(function() assert.tensor_near({ {}, {} }, cs.zeros({ 3, 0 }, { device = dev })) end))
  end)
end)

H.each_device("assert.tensor_equal and assert.same_shape", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt }) end

  it("tensor_equal passes only on exactly equal values", function()
    assert.tensor_equal({ 1, 2, 3 }, T({ 1, 2, 3 }))
    assert.tensor_equal({ true, false }, T({ true, false }))
    assert.tensor_equal({ 0 / 0 }, T({ 0 / 0 }))
    local msg = failure(function() assert.tensor_equal({ 1, 2, 3 }, T({ 1, 2, 3 + 2 ^ -20 })) end)
    assert.matches("first at [3]", msg, 1, true)
    assert.is_string(failure(function() assert.tensor_equal({ true, true }, T({ true, false })) end))
    -- int64 values that a double cannot tell apart still differ
    local a = cs.tensor({ 0x7ffffffffffffff1LL }, { dtype = "int64", device = dev })
    local b = cs.tensor({ 0x7ffffffffffffff0LL }, { dtype = "int64", device = dev })
    assert.is_string(failure(function() assert.tensor_equal(a, b) end))
    assert.tensor_equal(a, a:clone())
  end)

  it("tensor_equal takes -0.0 for +0.0 (numpy's array_equal); {strict = true} compares the signs of zeros", function()
    local rng = H.rng(H.seed_for("strict " .. dev))
    local values = H.random_table(rng, { 3, 4 }, "float64", "sum")
    local i, j = rng:int(1, 3), rng:int(1, 4)
    values[i][j] = 0.0
    local x = T(values, "float64")
    values[i][j] = -0.0
    assert.tensor_equal(values, x)
    local msg = failure(function() assert.tensor_equal(values, x, { strict = true }) end)
    assert.matches(("first at [%d][%d]: expected -0, actual 0"):format(i, j), msg, 1, true)
    assert.matches("signs of zeros compared", msg, 1, true)
    assert.is_not.tensor_equal(values, x, { strict = true })
    values[i][j] = 0.0
    assert.tensor_equal(values, x, { strict = true })
    -- NaN matches NaN in both modes; a NaN against a number fails in both
    assert.tensor_equal({ 0 / 0, -0.0 }, T({ 0 / 0, -0.0 }), { strict = true })
    assert.is_string(failure(function() assert.tensor_equal({ 0 / 0 }, T({ 1 }), { strict = true }) end))
    assert.is_string(failure(function() assert.tensor_equal({ 1 }, T({ 0 / 0 }), { strict = true }) end))
    -- a tensor as expected, and a float32 one
    assert.is_not.tensor_equal(T({ -0.0, 1 }), T({ 0.0, 1 }), { strict = true })
    assert.tensor_equal(T({ -0.0, 1 }), T({ 0.0, 1 }))
    -- integers have one zero; a misspelt option is an error, not a failure
    assert.tensor_equal({ 0, 1 }, T({ 0, 1 }, "int32"), { strict = true })
    local ok, err = pcall(function() assert.tensor_equal({ 1 }, T({ 1 }), { strcit = true }) end)
    assert.is_false(ok)
    assert.matches("cuscan: tensor_equal: opts: unknown option 'strcit'", tostring(err), 1, true)
    ok = pcall(function() assert.is_not.tensor_equal({ 1 }, T({ 2 }), { strict = "yes" }) end)
    assert.is_false(ok)
  end)

  it("same_shape compares shapes of tensors and tables", function()
    assert.same_shape(T({ { 1, 2 } }), cs.zeros({ 1, 2 }, { device = dev }))
    assert.same_shape({ { 1, 2 } }, cs.zeros({ 1, 2 }, { device = dev }))
    local msg = failure(function() assert.same_shape(T({ 1, 2 }), cs.zeros({ 2, 1 }, { device = dev })) end)
    assert.matches("shapes: 2 and 2x1", msg, 1, true)
    assert.is_not.same_shape(T({ 1, 2 }), T({ 1, 2, 3 }))
  end)
end)

-- x[i], x[i] = v and #x (issue 14, item 3): torch7 / PyTorch semantics with 1-based indices,
-- negative from the end. Checked against plain Lua tables holding the same values.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

-- The line of the error a one-line closure raises, checked for the cuscan: prefix and needles.
local function raises(fn, needles)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  err = tostring(err)
  local prefix = ("%s:%d: cuscan: "):format(debug.getinfo(fn, "S").short_src, debug.getinfo(fn, "S").linedefined)
  assert.equal(prefix, err:sub(1, #prefix))
  for _, needle in ipairs(needles) do
    assert.is_truthy(err:find(needle, 1, true), ("the error should mention %q: %q"):format(needle, err))
  end
end

H.each_device("indexing", function(dev, it)
  local rng = H.rng(H.seed_for("indexing " .. dev))

  it("#x is the size of dim 1, x[i] a view of x:select(1, i) for every i, negative ones too", function()
    for _ = 1, 20 do
      local shape = { rng:int(1, 5), rng:int(1, 4), rng:int(1, 3) }
      shape = { unpack(shape, 1, rng:int(2, 3)) }
      local values = H.random_table(rng, shape, "float64", "sum")
      local x = cs.tensor(values, { dtype = "float64", device = dev })
      assert.equal(shape[1], #x)
      for i = 1, shape[1] do
        assert.tensor_equal(values[i], x[i])
        assert.tensor_equal(values[i], x[i - shape[1] - 1])
        assert.equal(dev, x[i].device)
      end
    end
  end)

  it("x[i] of a 1-d tensor is the element itself, of any dtype", function()
    local values = H.random_table(rng, { 7 }, "int32", "sum")
    local x = cs.tensor(values, { dtype = "int64", device = dev })
    for i = 1, 7 do
      assert.equal(values[i], x[i])
      assert.equal(values[8 - i], x[-i])
    end
    local b = cs.tensor({ true, false, true }, { device = dev })
    assert.same({ true, false, true }, { b[1], b[2], b[-1] })
    local f = cs.tensor({ 0.1 }, { device = dev })
    assert.equal(H.f32(0.1), f[1])
  end)

  it("x[i] shares x's storage: writes through it reach x, as x[i][j] = v does", function()
    local x = cs.zeros({ 3, 4 }, { device = dev })
    local row = x[2]
    row[3] = 7
    x[3][-1] = -2
    assert.same({ { 0, 0, 0, 0 }, { 0, 0, 7, 0 }, { 0, 0, 0, -2 } }, x:totable())
    -- a view of a view: transposed, then indexed
    local t = cs.arange(6, { device = dev }):reshape({ 2, 3 }):transpose(1, 2)
    assert.equal(3, #t)
    assert.same({ 2, 5 }, t[3]:totable())
    t[1] = 9
    assert.same({ { 9, 1, 2 }, { 9, 4, 5 } }, t:transpose(1, 2):totable())
  end)

  it("x[i] = number fills the slice; other slices keep their values", function()
    for _ = 1, 10 do
      local shape = { rng:int(1, 5), rng:int(1, 4) }
      local values = H.random_table(rng, shape, "float64", "sum")
      local x = cs.tensor(values, { dtype = "float64", device = dev })
      local i = rng:int(1, shape[1])
      if rng:bool() then i = i - shape[1] - 1 end
      local v = rng:uniform(-5, 5)
      x[i] = v
      local k = i < 0 and shape[1] + i + 1 or i
      for j = 1, shape[2] do values[k][j] = v end
      assert.tensor_equal(values, x)
    end
  end)

  it("x[i] = tensor copies, broadcasting, converting dtypes and devices", function()
    local x = cs.zeros({ 3, 2, 2 }, { dtype = "int32", device = dev })
    x[1] = cs.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "float64", device = dev })
    x[2] = cs.tensor({ 5, 6 }, { device = "cpu" })          -- broadcast over rows, from the CPU
    x[-1] = cs.tensor(-1.9, { device = dev })               -- 0-d, truncated toward zero
    assert.same({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 5, 6 } }, { { -1, -1 }, { -1, -1 } } }, x:totable())
    -- a leading dim of size 1 in v is dropped, as PyTorch does
    local v = cs.tensor({ 10, 20, 30 }, { device = dev })
    v[2] = cs.tensor({ 7 }, { device = dev })
    assert.same({ 10, 7, 30 }, v:totable())
    -- overlapping source and target
    local y = cs.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev })
    y[1] = y[2]
    assert.same({ { 3, 4 }, { 3, 4 } }, y:totable())
  end)

  it("x[i] = v checks v as every element is checked, and changes nothing on an error", function()
    local x = cs.tensor({ 1, 2, 3 }, { dtype = "int32", device = dev })
    raises(function() x[1] = 2 ^ 31 end, { "x[i] = v: v: 2147483648 is out of range for int32" })
    raises(function() x[2] = 0 / 0 end, { "x[i] = v: v: NaN cannot be stored in int32" })
    raises(function() x[2] = -math.huge end, { "-inf cannot be stored in int32" })
    raises(function() x[1] = "7" end, { "x[i] = v: v: expected a number, a boolean or a tensor, got string" })
    raises(function() x[1] = cs.tensor({ 1, 2 }, { device = dev }) end, { "v: shape 2 does not broadcast to x[i]'s shape scalar" })
    assert.same({ 1, 2, 3 }, x:totable())
    x[3] = 2 ^ 31 - 1.5       -- truncated toward zero, in range
    x[1] = -2 ^ 31
    assert.same({ -2147483648, 2, 2147483646 }, x:totable())
  end)

  it("x[i] = v into an expanded view is an error, and changes nothing", function()
    local base = cs.tensor({ { 1, 2 } }, { device = dev })
    local e = base:expand(3, 2)
    raises(function() e[1] = 0 end, { "x[i] = v: x: cannot write into an expanded view (dim 1 of size 3 has stride 0" })
    raises(function() e[2] = cs.tensor({ 7, 8 }, { device = dev }) end, { "cannot write into an expanded view" })
    local one = cs.tensor({ 4 }, { device = dev })
    raises(function() one:expand(3)[2] = 5 end, { "cannot write into an expanded view" })
    assert.same({ { 1, 2 } }, base:totable())
    assert.same({ 4 }, one:totable())
    -- a view that repeats nothing (size-1 dims of stride 0) takes writes
    local single = one:expand(1)
    single[1] = 6
    assert.same({ 6 }, one:totable())
    raises(function() local _ = cs.zeros({ 3 }, { device = dev }):select(1, 2 ^ 63) end, { "select: index: 9223372036854775808 is out of range" })
  end)

  it("indices out of range, fractional or 0 are errors naming the expression", function()
    local x = cs.zeros({ 2, 3 }, { device = dev })
    raises(function() local _ = x[3] end, { "x[i]: i: 3 is out of range for dim 1 of size 2 (expected 1..2 or -2..-1)" })
    raises(function() local _ = x[-3] end, { "x[i]: i: -3 is out of range" })
    raises(function() local _ = x[0] end, { "indices are 1-based" })
    raises(function() local _ = x[1.5] end, { "x[i]: i: expected an integer index, got number 1.5" })
    raises(function() local _ = x[0 / 0] end, { "x[i]: i: expected an integer index" })
    raises(function() x[5] = 1 end, { "x[i] = v: i: 5 is out of range" })
    raises(function() x[true] = 1 end, { "cannot set field boolean true" })
    -- keys that are neither numbers nor names are not read as a missing field
    raises(function() local _ = x[2LL] end, { "x[i]: i: expected an integer index, got cdata" })
    raises(function() local _ = x[true] end, { "x[i]: i: expected an integer index, got boolean true" })
    raises(function() local _ = cs.zeros({ 0 }, { device = dev })[1] end, { "1 is out of range for dim 1 of size 0" })
    local s = cs.tensor(4, { device = dev })
    raises(function() local _ = s[1] end, { "x[i]: x: a 0-d tensor cannot be indexed (use x:item())" })
    raises(function() local _ = #s end, { "#x: x: a 0-d tensor has no length" })
    local freed = cs.zeros({ 2 }, { device = dev })
    freed:free()
    raises(function() local _ = #freed end, { "#x: x: tensor was freed" })
    raises(function() local _ = freed[1] end, { "x[i]: x: tensor was freed" })
    assert.equal(0, #cs.zeros({ 0, 4 }, { device = dev }))
    -- names that are not indices read as nothing, as fields of any Lua value do
    assert.is_nil(x.nonexistent)
  end)
end)

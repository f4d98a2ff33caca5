-- cuscan.assertions: luassert extensions for busted specs. `require("cuscan.assertions")` registers
--
--   assert.tensor_near(expected, actual[, rtol[, atol]])
--       actual is a tensor; expected a tensor, a nested Lua table, a number (0-d) or a boolean.
--       Passes when the shapes agree, the dtypes are compatible (bool with bool, numbers with
--       numbers) and every element satisfies |actual - expected| <= atol + rtol * |expected|
--       (numpy's rule; NaN matches NaN, an infinity only the same infinity). Default tolerances
--       follow actual's dtype: float32 rtol 1e-5, atol 1e-6; float64 rtol 1e-9, atol 1e-12;
--       float16 rtol 1e-3, atol 1e-5; bfloat16 rtol 1.6e-2, atol 1e-5; integers and bool exact. A
--       failure names the first differing index, both values, the count of differing elements and
--       the largest absolute and relative errors.
--   assert.tensor_equal(expected, actual[, {strict = true}])
--       the same with exact equality: numpy's array_equal rule, where -0.0 equals +0.0 (and, as in
--       tensor_near, NaN matches NaN). With strict, a zero must also have the expected sign.
--   assert.same_shape(a, b)                    tensors (or nested tables) of one shape.
--
-- All three work negated (assert.is_not.tensor_near(...)). The comparison itself runs in the C
-- core on the tensors' device; only a failure reads values back to describe it.
local cs = require("cuscan")  -- first: under a Lua that is not LuaJIT it says so
local say = require("say")
local luassert = require("luassert")
local core = require("cuscan.core")
core.own_file()
local data = require("cuscan.data")
local ops = require("cuscan.ops")

local format = string.format
local abs, huge = math.abs, math.huge

local DEFAULT_TOL = {  -- float16 and bfloat16 as torch.testing.assert_close has them
  float32 = { 1e-5, 1e-6 },
  float64 = { 1e-9, 1e-12 },
  float16 = { 1e-3, 1e-5 },
  bfloat16 = { 1.6e-2, 1e-5 },
  int32 = { 0, 0 }, int64 = { 0, 0 }, bool = { 0, 0 },
}

-- Shape and value kind of a nested table (or number / boolean): nil and a message when ragged.
local function table_shape(v)
  local shape = {}
  local t = v
  while type(t) == "table" do
    shape[#shape + 1] = #t
    t = t[1]
  end
  local kind = type(t) == "boolean" and "bool" or "number"
  return shape, kind
end

local function shape_text(shape)
  return core.shape_str(shape)
end

-- Shapes agree. A nested table cannot express the dims that follow a size-0 dim ({} is the
-- table of any empty shape), so they are compared up to the table's first 0.
local function shapes_agree(tshape, ashape, from_table)
  if from_table then
    for i, s in ipairs(tshape) do
      if ashape[i] ~= s then return false end
      if s == 0 then return true end
    end
    return #tshape == #ashape
  end
  if #tshape ~= #ashape then return false end
  for i = 1, #tshape do if tshape[i] ~= ashape[i] then return false end end
  return true
end

local function index_text(k, shape)
  if #shape == 0 then return "[] (0-d)" end
  local idx = {}
  local rem = k - 1
  for d = #shape, 1, -1 do
    idx[d] = rem % shape[d] + 1
    rem = math.floor(rem / shape[d])
  end
  return "[" .. table.concat(idx, "][") .. "]"
end

local function num(v)
  if type(v) == "boolean" then return v and 1 or 0 end
  return tonumber(v)
end

local function value_text(v)
  if type(v) == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
  return tostring(v)
end

local function is_close(a, e, rtol, atol)
  if a ~= a or e ~= e then return a ~= a and e ~= e end
  if a == e then return true end
  if a == huge or a == -huge or e == huge or e == -huge then return false end
  return abs(a - e) <= atol + rtol * abs(e)
end

-- Compares; returns ok and a description (of the difference, or of the agreement).
local function compare(expected, actual, rtol, atol, exact, strict)
  -- sharded tensors are compared whole
  if core.is_sharded and core.is_sharded(actual) then actual = actual:gather("cpu") end
  if core.is_sharded and core.is_sharded(expected) then expected = expected:gather("cpu") end
  if not core.is_tensor(actual) then
    return false, "actual: expected a cuscan tensor, got " .. core.describe(actual)
  end
  if actual:is_freed() then return false, "actual: tensor was freed" end
  local ashape = actual:shape()
  local adtype = actual.dtype
  local from_table = not core.is_tensor(expected)
  local eshape, ekind
  if from_table then
    local te = type(expected)
    if te ~= "table" and te ~= "number" and te ~= "boolean" then
      return false, "expected: expected a tensor, a nested table, a number or a boolean, got " .. core.describe(expected)
    end
    eshape, ekind = table_shape(expected)
  else
    if expected:is_freed() then return false, "expected: tensor was freed" end
    eshape = expected:shape()
    ekind = expected.dtype == "bool" and "bool" or "number"
  end
  if not shapes_agree(eshape, ashape, from_table) then
    return false, format("shapes differ: expected %s, actual %s", shape_text(eshape), shape_text(ashape))
  end
  local akind = adtype == "bool" and "bool" or "number"
  if akind ~= ekind then
    return false, format("dtypes are not compatible: expected holds %s values, actual is %s",
                         ekind == "bool" and "bool" or "numeric", adtype)
  end
  local tol = DEFAULT_TOL[adtype]
  if exact then rtol, atol = 0, 0 end
  if rtol == nil then rtol = tol[1] end
  if atol == nil then atol = tol[2] end
  if type(rtol) ~= "number" or not (rtol >= 0) then return false, "rtol: expected a non-negative number, got " .. core.describe(rtol) end
  if type(atol) ~= "number" or not (atol >= 0) then return false, "atol: expected a non-negative number, got " .. core.describe(atol) end

  local et
  if from_table then
    local ok, res = pcall(data.from_table, expected, ekind == "bool" and core.BOOL or core.F64, core.CPU, "expected")
    if not ok then return false, "expected: " .. tostring(res):gsub("^.-cuscan: ", "") end
    et = res
  else
    et = expected
  end
  if actual:numel() == 0 then return true, "both are empty" end

  -- exact integer comparison where both are integer tensors (no rounding through double)
  local far
  local is_float = core.IS_FLOAT
  local ints = not from_table and rtol == 0 and atol == 0 and not is_float[core.DTYPE[adtype]] and
               not is_float[core.DTYPE[expected.dtype]]
  if ints then
    local e2 = et.device == actual.device and et or et:to(actual.device)
    far = actual:ne(e2):sum()
  else
    local max_abs
    max_abs, far = ops.compare(actual, et, rtol, atol, true, "tensor_near")
    -- an infinity against another value can slip through rtol * inf: look at the values then
    if far == 0 and max_abs == huge then far = -1 end
  end
  -- strict: equal values may still be zeros of different signs, which only the values show
  strict = strict and not ints
  if far == 0 and not strict then
    return true, format("all %d elements are within rtol=%g, atol=%g", actual:numel(), rtol, atol)
  end

  -- describe the difference from the values themselves
  local av, ev = data.flat(actual, "tensor_near", ints), data.flat(et, "tensor_near", ints)
  local first, max_abs, max_rel, nans, bad = nil, 0, 0, 0, 0
  for i = 1, #av do
    local a, e = num(av[i]), num(ev[i])
    local close
    if ints then close = av[i] == ev[i] else close = is_close(a, e, rtol, atol) end
    if close and strict and a == 0 and e == 0 and (1 / a > 0) ~= (1 / e > 0) then close = false end
    if not close then
      first = first or i
      bad = bad + 1
    end
    if (a ~= a) ~= (e ~= e) then nans = nans + 1 end
    if a == a and e == e and a ~= e then
      local d = abs(a - e)
      if d ~= d then d = huge end
      if d > max_abs then max_abs = d end
      if e ~= 0 then
        local r = d / abs(e)
        if r > max_rel then max_rel = r end
      elseif d > 0 then
        max_rel = huge
      end
    end
  end
  if bad == 0 then
    return true, format("all %d elements are within rtol=%g, atol=%g", actual:numel(), rtol, atol)
  end
  return false, format(
    "%d of %d elements differ (rtol=%g, atol=%g%s)\n  first at %s: expected %s, actual %s\n  max abs error %.6g, max rel error %.6g%s\n  actual: %s %s tensor on %s",
    bad, #av, rtol, atol, strict and ", signs of zeros compared" or "", index_text(first, ashape), value_text(ev[first]), value_text(av[first]),
    max_abs, max_rel, nans > 0 and format(" (over numbers; %d NaN where the other has a number)", nans) or "",
    shape_text(ashape), adtype, actual.device)
end

local function tensor_near(state, arguments)
  local ok, msg = compare(arguments[1], arguments[2], arguments[3], arguments[4], false)
  state.failure_message = msg
  return ok
end

local EQUAL_OPTS = { strict = true }

local function tensor_equal(state, arguments)
  -- a misspelt option is an error, not a failure (which a negated assertion would take for a pass)
  local opts = core.check_opts(arguments[3], EQUAL_OPTS, "tensor_equal")
  local strict = opts ~= nil and core.check_bool_opt(opts.strict, "tensor_equal", "strict")
  local ok, msg = compare(arguments[1], arguments[2], nil, nil, true, strict)
  state.failure_message = msg
  return ok
end

local function shape_of(v)
  if core.is_tensor(v) then
    if v:is_freed() then return nil, "tensor was freed" end
    return v:shape(), false
  end
  if type(v) == "table" or type(v) == "number" or type(v) == "boolean" then
    return (table_shape(v)), true
  end
  return nil, "expected a tensor or a nested table, got " .. core.describe(v)
end

local function same_shape(state, arguments)
  local sa, ta = shape_of(arguments[1])
  local sb, tb = shape_of(arguments[2])
  if not sa then state.failure_message = "a: " .. ta return false end
  if not sb then state.failure_message = "b: " .. tb return false end
  local ok
  if ta and not tb then ok = shapes_agree(sa, sb, true)
  elseif tb and not ta then ok = shapes_agree(sb, sa, true)
  else ok = shapes_agree(sa, sb, false) end
  state.failure_message = format("shapes: %s and %s", shape_text(sa), shape_text(sb))
  return ok
end

say:set("assertion.tensor_near.positive", "Expected the tensors to be near.")
say:set("assertion.tensor_near.negative", "Expected the tensors not to be near.")
say:set("assertion.tensor_equal.positive", "Expected the tensors to be equal.")
say:set("assertion.tensor_equal.negative", "Expected the tensors to differ.")
say:set("assertion.same_shape.positive", "Expected the same shape.")
say:set("assertion.same_shape.negative", "Expected different shapes.")

luassert:register("assertion", "tensor_near", tensor_near,
                  "assertion.tensor_near.positive", "assertion.tensor_near.negative")
luassert:register("assertion", "tensor_equal", tensor_equal,
                  "assertion.tensor_equal.positive", "assertion.tensor_equal.negative")
luassert:register("assertion", "same_shape", same_shape,
                  "assertion.same_shape.positive", "assertion.same_shape.negative")

local instance = {
  compare = compare,
  default_tolerance = DEFAULT_TOL,
  cs = cs,
}
return instance

-- cuscan.ops: the experiment toolkit: arithmetic operators and comparisons with numpy broadcasting
-- and torch's type promotion, unary math, reductions, cat, fill, copy, and result checking
-- (allclose, max_abs_diff). Broadcast operands are stride-0 views made in Lua; C sees one shape.
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local tonumber, type, floor = tonumber, type, math.floor
local check_tensor, is_tensor, is_int = core.check_tensor, core.is_tensor, core.is_int
local F32, F64, I32, I64, BOOL = core.F32, core.F64, core.I32, core.I64, core.BOOL
local CPU = core.CPU
local DTYPE_NAME, DEVICE_NAME, IS_FLOAT, RANK = core.DTYPE_NAME, core.DEVICE_NAME, core.IS_FLOAT, core.RANK
local SH, ST = core.SH, core.ST
local shape_of, shape_str = core.shape_of, core.shape_str

local M = core.methods
local ops = {}

local B = {
  add = tonumber(C.CS_ADD), sub = tonumber(C.CS_SUB), mul = tonumber(C.CS_MUL), div = tonumber(C.CS_DIV),
  pow = tonumber(C.CS_POW), lt = tonumber(C.CS_LT), le = tonumber(C.CS_LE), gt = tonumber(C.CS_GT),
  ge = tonumber(C.CS_GE), eq = tonumber(C.CS_EQ), ne = tonumber(C.CS_NE),
  logical_and = tonumber(C.CS_LOGICAL_AND), logical_or = tonumber(C.CS_LOGICAL_OR),
  max2 = tonumber(C.CS_MAX2), min2 = tonumber(C.CS_MIN2),
}
local U = {
  neg = tonumber(C.CS_NEG), exp = tonumber(C.CS_EXP), log = tonumber(C.CS_LOG), abs = tonumber(C.CS_ABS),
  sqrt = tonumber(C.CS_SQRT), logical_not = tonumber(C.CS_LOGICAL_NOT),
}
local R = { sum = tonumber(C.CS_REDUCE_SUM), mean = tonumber(C.CS_REDUCE_MEAN), max = tonumber(C.CS_REDUCE_MAX),
            min = tonumber(C.CS_REDUCE_MIN) }

---------------------------------------------------------------------------------------------------
-- Broadcasting
---------------------------------------------------------------------------------------------------
-- numpy's rule: align shapes at their last dims; sizes must match or one of them be 1.
local function broadcast_shape(sa, sb, fname)
  local na, nb = #sa, #sb
  local n = na > nb and na or nb
  local out = {}
  for i = 0, n - 1 do
    local a = sa[na - i] or 1
    local b = sb[nb - i] or 1
    local s
    if a == b or b == 1 then s = a
    elseif a == 1 then s = b
    else
      raise(format("%s: shapes %s and %s cannot be broadcast together (sizes %d and %d at dim %d from the end)",
                   fname, shape_str(sa), shape_str(sb), a, b, i + 1))
    end
    out[n - i] = s
  end
  return out
end
ops.broadcast_shape = broadcast_shape

-- The tensor t seen with shape `to` (t's shape broadcasts to it): t itself, or a view with zero
-- strides.
local function expand(t, tshape, to, fname)
  local th = check_tensor(t, fname, "x")
  local nt, n = #tshape, #to
  local same = nt == n
  if same then
    for i = 1, n do if tshape[i] ~= to[i] then same = false break end end
  end
  if same then return t end
  for i = 0, n - 1 do
    local d = nt - i
    local size = tshape[d]
    SH[n - 1 - i] = to[n - i]
    if d >= 1 and size == to[n - i] and size ~= 1 then
      ST[n - 1 - i] = C.cs_tensor_stride(th, d - 1)
    else
      ST[n - 1 - i] = 0
    end
  end
  return core.view_from_sh(th, n, C.cs_tensor_offset(th), fname)
end
ops.expand = expand

local function check_same_device(a, b, fname)
  local da, db = core.device_of(a), core.device_of(b)
  if da ~= db then
    raise(format("%s: tensors are on different devices (%s and %s); move one with :to()", fname,
                 DEVICE_NAME[da], DEVICE_NAME[db]))
  end
  return da
end

---------------------------------------------------------------------------------------------------
-- Type promotion (as torch): bool < int32 < int64 < float16, bfloat16 < float32 < float64, and
-- float16 with bfloat16 gives float32 (neither holds the other's values). A number keeps a float
-- tensor's dtype and an integer tensor's dtype when it is a whole number (which must then fit in
-- that dtype); a fractional, infinite or NaN number with an integer or bool tensor gives float32;
-- a whole number with a bool tensor gives int64.
---------------------------------------------------------------------------------------------------
local function promote(a, b)
  if RANK[a] == RANK[b] and a ~= b then return F32 end
  return RANK[a] >= RANK[b] and a or b
end
ops.promote = promote

local function with_number(dt, v)
  if IS_FLOAT[dt] then return dt end
  if is_int(v) then return dt == BOOL and I64 or dt end
  return F32
end

ops.with_number = with_number

local function scalar_of(v, fname, argname)
  local t = type(v)
  if t == "number" then return v end
  if t == "boolean" then return v and 1 or 0 end
  raise(format("%s: %s: expected a tensor or a number, got %s", fname, argname, describe(v)))
end

---------------------------------------------------------------------------------------------------
-- Element-wise
---------------------------------------------------------------------------------------------------
-- op(a, b) where a and b are tensors or numbers (at least one a tensor). kind: "arith", "div",
-- "pow", "cmp" or "logic".
local function binary(a, b, op, kind, fname)
  local ta, tb = is_tensor(a), is_tensor(b)
  local ah, bh
  if ta then ah = check_tensor(a, fname, "a") end
  if tb then bh = check_tensor(b, fname, "b") end
  if ta and tb then
    local dev = check_same_device(ah, bh, fname)
    local da, db = core.dtype_of(ah), core.dtype_of(bh)
    local odt
    if kind == "cmp" or kind == "logic" then
      odt = BOOL
    else
      odt = promote(da, db)
      if kind == "div" and not IS_FLOAT[odt] then odt = F32 end
      if odt == BOOL then
        if op == B.sub then raise(fname .. ": subtraction of bool tensors is not supported (use logical ops)") end
        if kind == "pow" then odt = I64 end
      end
      if kind == "pow" and not IS_FLOAT[odt] and core.numel_of(bh) > 0 then
        if ops.reduce_all(bh, R.min, "pow") < 0 then
          raise("pow: p: integer tensors cannot be raised to negative integer powers")
        end
      end
    end
    local sa, sb = shape_of(ah), shape_of(bh)
    local shape = broadcast_shape(sa, sb, fname)
    local va, vb = expand(a, sa, shape, fname), expand(b, sb, shape, fname)
    local out
    if va == a then out = core.empty_like(ah, odt, dev, fname)
    elseif vb == b then out = core.empty_like(bh, odt, dev, fname)
    else out = core.empty(shape, odt, dev, fname) end
    core.call(fname, C.cs_binary, check_tensor(out, fname, "out"), check_tensor(va, fname, "a"),
              check_tensor(vb, fname, "b"), op)
    return out
  end
  local t, s, first = ah, b, 0
  if not ta then
    if not tb then raise(format("%s: expected a tensor operand, got %s and %s", fname, describe(a), describe(b))) end
    t, s, first = bh, a, 1
  end
  local sname = kind == "pow" and "p" or (first == 1 and "a" or "b")
  s = scalar_of(s, fname, sname)
  local dt = core.dtype_of(t)
  local odt
  if kind == "cmp" or kind == "logic" then
    odt = BOOL
  else
    odt = with_number(dt, s)
    if kind == "div" and not IS_FLOAT[odt] then odt = F32 end
    -- the number takes part as an element of the integer result, so it must be one
    if not IS_FLOAT[odt] and odt ~= BOOL then s = core.check_element(s, odt, fname, sname) end
    if odt == BOOL and op == B.sub then
      raise(fname .. ": subtraction with a bool tensor is not supported (use logical ops)")
    end
    if kind == "pow" and not IS_FLOAT[odt] then
      if first == 0 and s < 0 then
        raise(format("pow: p: integer tensors cannot be raised to a negative integer power (%d)", s))
      end
      if first == 1 and core.numel_of(t) > 0 and ops.reduce_all(t, R.min, "pow") < 0 then
        raise("pow: p: integers cannot be raised to negative integer powers")
      end
      if odt == BOOL then odt = I64 end
    end
  end
  local out = core.empty_like(t, odt, core.device_of(t), fname)
  core.call(fname, C.cs_binary_scalar, check_tensor(out, fname, "out"), t, s, op, first)
  return out
end
ops.binary = binary

local function unary(x, op, fname, result)
  local xh = check_tensor(x, fname, "x")
  local dt = core.dtype_of(xh)
  local odt
  if result == "float" then odt = IS_FLOAT[dt] and dt or F32
  elseif result == "bool" then odt = BOOL
  else
    if dt == BOOL then raise(format("%s: x: bool tensors are not supported", fname)) end
    odt = dt
  end
  local out = core.empty_like(xh, odt, core.device_of(xh), fname)
  core.call(fname, C.cs_unary, check_tensor(out, fname, "out"), xh, op)
  return out
end

function M.exp(x) return unary(x, U.exp, "exp", "float") end
function M.log(x) return unary(x, U.log, "log", "float") end
function M.sqrt(x) return unary(x, U.sqrt, "sqrt", "float") end
function M.abs(x) return unary(x, U.abs, "abs", "same") end
function M.neg(x) return unary(x, U.neg, "neg", "same") end
function M.logical_not(x) return unary(x, U.logical_not, "logical_not", "bool") end

-- The methods take self as the tensor operand (the operators below may receive a number first).
local function method(op, kind, fname)
  return function(x, v)
    check_tensor(x, fname, "x")
    return binary(x, v, op, kind, fname)
  end
end

M.add = method(B.add, "arith", "add")
M.sub = method(B.sub, "arith", "sub")
M.mul = method(B.mul, "arith", "mul")
M.div = method(B.div, "div", "div")
M.pow = method(B.pow, "pow", "pow")
M.lt = method(B.lt, "cmp", "lt")
M.le = method(B.le, "cmp", "le")
M.gt = method(B.gt, "cmp", "gt")
M.ge = method(B.ge, "cmp", "ge")
M.eq = method(B.eq, "cmp", "eq")
M.ne = method(B.ne, "cmp", "ne")

local function logical(a, b, op, fname)
  check_tensor(a, fname, "a")
  if not is_tensor(b) and type(b) ~= "boolean" then
    raise(format("%s: b: expected a tensor or a boolean, got %s", fname, describe(b)))
  end
  return binary(a, b, op, "logic", fname)
end
function M.logical_and(a, b) return logical(a, b, B.logical_and, "logical_and") end
function M.logical_or(a, b) return logical(a, b, B.logical_or, "logical_or") end

-- element-wise max/min of two tensors (or a tensor and a number), numpy's maximum/minimum
M.maximum = method(B.max2, "arith", "maximum")
M.minimum = method(B.min2, "arith", "minimum")

-- operators: the metamethod may receive the number first
ops.meta = {
  __add = function(a, b) return binary(a, b, B.add, "arith", "add") end,
  __sub = function(a, b) return binary(a, b, B.sub, "arith", "sub") end,
  __mul = function(a, b) return binary(a, b, B.mul, "arith", "mul") end,
  __div = function(a, b) return binary(a, b, B.div, "div", "div") end,
  __unm = function(a) return unary(a, U.neg, "neg", "same") end,
}

---------------------------------------------------------------------------------------------------
-- Reductions. Overall ones return a Lua number; with a dim, a tensor without that dim.
---------------------------------------------------------------------------------------------------
local scalar_f64, scalar_i64  -- cached 0-d CPU tensors that receive overall results

-- The reduction of all elements of the tensor with handle xh, as a Lua number.
local function reduce_all(xh, op, fname)
  local dt = core.dtype_of(xh)
  local dev = core.device_of(xh)
  local float = IS_FLOAT[dt] or op == R.mean
  local odt = float and F64 or I64
  local out = core.empty({}, odt, dev, fname)
  core.call(fname, C.cs_reduce, check_tensor(out, fname, "out"), xh, -1, op)
  if dev ~= CPU then
    if float then
      scalar_f64 = scalar_f64 or core.empty({}, F64, CPU, fname)
      core.call(fname, C.cs_copy, check_tensor(scalar_f64, fname, "out"), check_tensor(out, fname, "out"))
      out = scalar_f64
    else
      scalar_i64 = scalar_i64 or core.empty({}, I64, CPU, fname)
      core.call(fname, C.cs_copy, check_tensor(scalar_i64, fname, "out"), check_tensor(out, fname, "out"))
      out = scalar_i64
    end
  end
  local v
  local oh = check_tensor(out, fname, "out")
  local p = ffi.cast(core.ELEM_PTR[odt], C.cs_tensor_host_data(oh)) + C.cs_tensor_offset(oh)
  if odt == F64 then v = core.read_f64(ffi.cast("uint32_t *", p), 0) else v = tonumber(p[0]) end
  core.keep(out)  -- p points into out's storage
  return v
end
ops.reduce_all = reduce_all

local function reduce(x, dim, op, fname)
  local xh = check_tensor(x, fname, "x")
  if dim == nil then return reduce_all(xh, op, fname) end
  local nd = core.ndim_of(xh)
  local k = core.norm_dim(dim, nd, fname)
  local dt = core.dtype_of(xh)
  local odt
  if op == R.sum then odt = IS_FLOAT[dt] and dt or I64
  elseif op == R.mean then odt = IS_FLOAT[dt] and dt or F32
  else odt = dt end
  local shape = shape_of(xh)
  table.remove(shape, k + 1)
  local out = core.empty(shape, odt, core.device_of(xh), fname)
  core.call(fname, C.cs_reduce, check_tensor(out, fname, "out"), xh, k, op)
  return out
end

function M.sum(x, dim) return reduce(x, dim, R.sum, "sum") end
function M.mean(x, dim) return reduce(x, dim, R.mean, "mean") end
function M.max(x, dim) return reduce(x, dim, R.max, "max") end
function M.min(x, dim) return reduce(x, dim, R.min, "min") end

---------------------------------------------------------------------------------------------------
-- cat, fill, copy
---------------------------------------------------------------------------------------------------
-- cs.cat(list, dim): tensors of one device whose shapes agree except along dim, joined along it.
function ops.cat(list, dim)
  if type(list) ~= "table" or is_tensor(list) then
    raise(format("cat: list: expected a table of tensors, got %s", describe(list)))
  end
  local n = #list
  if n == 0 then raise("cat: list: expected at least one tensor, got an empty table") end
  local first = check_tensor(list[1], "cat", "list[1]")
  local nd = core.ndim_of(first)
  if nd == 0 then raise("cat: list[1]: 0-d tensors cannot be joined (reshape them to {1} first)") end
  if dim == nil then dim = 1 end
  local k = core.norm_dim(dim, nd, "cat") + 1
  local dev = core.device_of(first)
  local shape = shape_of(first)
  local odt = core.dtype_of(first)
  local total = 0
  for i = 1, n do
    local t = check_tensor(list[i], "cat", "list[" .. i .. "]")
    local tdev = core.device_of(t)
    if tdev ~= dev then
      raise(format("cat: list[%d]: expected a tensor on %s like list[1], got one on %s", i, DEVICE_NAME[dev], DEVICE_NAME[tdev]))
    end
    local s = shape_of(t)
    local ok = #s == nd
    if ok then
      for d = 1, nd do if d ~= k and s[d] ~= shape[d] then ok = false end end
    end
    if not ok then
      raise(format("cat: list[%d]: shape %s does not match list[1]'s %s except along dim %d", i, shape_str(s),
                   shape_str(shape), k))
    end
    total = total + s[k]
    odt = promote(odt, core.dtype_of(t))
  end
  shape[k] = total
  core.parse_shape(shape, "cat")
  local out = core.empty(shape, odt, dev, "cat")
  local oh = check_tensor(out, "cat", "out")
  local ostrides = core.strides_of(oh)
  local pos = 0
  for i = 1, n do
    local t = check_tensor(list[i], "cat", "list[" .. i .. "]")
    local len = tonumber(C.cs_tensor_size(t, k - 1))
    if len > 0 then
      local s = shape_of(t)
      local v = core.view(oh, s, ostrides, pos * ostrides[k], "cat")
      core.call("cat", C.cs_copy, check_tensor(v, "cat", "out"), t)
    end
    pos = pos + len
  end
  return out
end

-- Sets every element of the tensor with handle xh to v (checked by core.check_element).
local function fill_handle(xh, v, fname, argname)
  local dt = tonumber(C.cs_tensor_dtype(xh))
  local e = core.check_element(v, dt, fname, argname)
  if IS_FLOAT[dt] then core.call(fname, C.cs_fill, xh, e) else core.call(fname, C.cs_fill_int64, xh, e) end
end
ops.fill_handle = fill_handle

-- x:fill(v): every element of x (a view writes through) set to v; returns x.
function M.fill(x, v)
  fill_handle(check_tensor(x, "fill", "x"), v, "fill", "value")
  return x
end

-- Copies the tensor y into the tensor with handle xh, y broadcasting to xh's shape; errors name
-- y as yname and the target as target ("x's").
local function copy_into(xh, y, fname, yname, target)
  local yh = check_tensor(y, fname, yname)
  local sx, sy = shape_of(xh), shape_of(yh)
  local ok = #sy <= #sx
  for i = 0, #sy - 1 do
    local a, b = sx[#sx - i], sy[#sy - i]
    if ok and b ~= a and b ~= 1 then ok = false end
  end
  if not ok then
    raise(format("%s: %s: shape %s does not broadcast to %s shape %s", fname, yname, shape_str(sy), target,
                 shape_str(sx)))
  end
  core.call(fname, C.cs_copy, xh, check_tensor(expand(y, sy, sx, fname), fname, yname))
end
ops.copy_into = copy_into

-- x:copy(y): x's elements set to y's (y broadcasts to x's shape; any dtype, any device); returns x.
function M.copy(x, y)
  copy_into(check_tensor(x, "copy", "x"), y, "copy", "y", "x's")
  return x
end

---------------------------------------------------------------------------------------------------
-- Checking results
---------------------------------------------------------------------------------------------------
local cmp_max = ffi.new("double[1]")
local cmp_max_bits = ffi.cast("uint32_t *", cmp_max)
local cmp_far = ffi.new("int64_t[1]")

-- v as a tensor: itself, or a CPU tensor made from a nested table, number or boolean.
local function as_tensor(v, fname, argname)
  if core.is_sharded and core.is_sharded(v) then return v:gather("cpu") end
  if is_tensor(v) then
    check_tensor(v, fname, argname)
    return v
  end
  if type(v) == "table" or type(v) == "number" or type(v) == "boolean" then
    return require("cuscan.data").from_table(v, type(v) == "boolean" and BOOL or F64, CPU, fname)
  end
  raise(format("%s: %s: expected a tensor, got %s", fname, argname, describe(v)))
end

local function compare(a, b, rtol, atol, equal_nan, fname)
  a = as_tensor(a, fname, "a")
  b = as_tensor(b, fname, "b")
  local sa, sb = shape_of(check_tensor(a, fname, "a")), shape_of(check_tensor(b, fname, "b"))
  local shape = broadcast_shape(sa, sb, fname)
  local va, vb = expand(a, sa, shape, fname), expand(b, sb, shape, fname)
  core.call(fname, C.cs_compare, check_tensor(va, fname, "a"), check_tensor(vb, fname, "b"), rtol, atol, equal_nan and 1 or 0, cmp_max, cmp_far)
  return core.read_f64(cmp_max_bits, 0), tonumber(cmp_far[0])
end
ops.compare = compare

local CLOSE_OPTS = { rtol = true, atol = true, equal_nan = true }

-- cs.allclose(a, b[, {rtol=1e-5, atol=1e-8, equal_nan=false}]): numpy's rule |a - b| <= atol + rtol |b|.
function ops.allclose(a, b, opts)
  local rtol, atol, equal_nan = 1e-5, 1e-8, false
  if type(opts) ~= "nil" then
    core.check_opts(opts, CLOSE_OPTS, "allclose")
    -- (not (v >= 0) also refuses NaN, which every comparison would take as "not close")
    if opts.rtol ~= nil then
      if type(opts.rtol) ~= "number" or not (opts.rtol >= 0) then
        raise(format("allclose: rtol: expected a non-negative number, got %s", describe(opts.rtol)))
      end
      rtol = opts.rtol
    end
    if opts.atol ~= nil then
      if type(opts.atol) ~= "number" or not (opts.atol >= 0) then
        raise(format("allclose: atol: expected a non-negative number, got %s", describe(opts.atol)))
      end
      atol = opts.atol
    end
    equal_nan = core.check_bool_opt(opts.equal_nan, "allclose", "equal_nan")
  end
  local max_abs, far = compare(a, b, rtol, atol, equal_nan, "allclose")
  -- an infinite difference with none counted far means an infinity met a different value whose
  -- tolerance (rtol * inf) came out infinite; numpy counts that as not close
  return far == 0 and max_abs ~= math.huge
end

-- cs.max_abs_diff(a, b): max |a - b| over elements (NaN when a NaN meets a number).
function ops.max_abs_diff(a, b)
  local m = compare(a, b, 0, 0, false, "max_abs_diff")
  return m
end

return ops

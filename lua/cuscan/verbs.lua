-- cuscan.verbs: the tensor verbs of torch7 and PyTorch, with 1-based dims: views that rearrange dims
-- (permute, expand, squeeze, unsqueeze), flip (a copy: C views need strides >= 0) and cs.where.
-- An expanded view repeats elements through stride 0: scans and other reads take it, and the C core
-- refuses to write into it (cs_check_writable).
local core = require("cuscan.core")
core.own_file()
local ops = require("cuscan.ops")

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local type, tonumber, select = type, tonumber, select
local check_tensor, norm_dim, is_int, is_tensor = core.check_tensor, core.norm_dim, core.is_int, core.is_tensor
local shape_of, strides_of, shape_str = core.shape_of, core.strides_of, core.shape_str
local F32, BOOL = core.F32, core.BOOL

local M = core.methods
local verbs = {}

-- The list a verb was given either as one table or as separate numbers: x:permute({2, 1}) or
-- x:permute(2, 1), as PyTorch takes both.
local function list_arg(fname, argname, ...)
  local first = ...
  if type(first) == "table" and not is_tensor(first) then
    if select("#", ...) > 1 then
      raise(format("%s: %s: expected one table or separate numbers, got a table followed by more arguments", fname, argname))
    end
    return first
  end
  return { ... }
end

local function offset_of(xh) return tonumber(C.cs_tensor_offset(xh)) end

-- The handle, shape and strides of the tensor argument x of fname.
local function layout(x, fname)
  local xh = check_tensor(x, fname, "x")
  return xh, shape_of(xh), strides_of(xh)
end

-- x:flip(dims): a copy of x with the order of elements reversed along each dim of dims (a dim or a
-- list of dims, 1-based, negative from the end).
function M.flip(x, ...)
  local xh = check_tensor(x, "flip", "x")
  if select("#", ...) == 0 then
    raise("flip: dims: expected a dim, a table of dims or separate dims, got nothing ({} flips no dim)")
  end
  local dims = list_arg("flip", "dims", ...)
  local nd = core.ndim_of(xh)
  local mask, seen = 0, {}
  for i = 1, #dims do
    -- a 0-d tensor has one element: dim 1 (or -1) names it, as for scans
    local d = norm_dim(dims[i], nd == 0 and 1 or nd, "flip", #dims == 1 and "dims" or format("dims[%d]", i))
    if seen[d] then raise(format("flip: dims: dim %d is named twice", d + 1)) end
    seen[d] = true
    if nd > 0 then mask = mask + 2 ^ d end
  end
  local dtype, dev = core.dtype_of(xh), core.device_of(xh)
  local out = core.empty_like(xh, dtype, dev, "flip")
  core.call("flip", C.cs_flip, check_tensor(out, "flip", "out"), xh, mask)
  return out
end

-- x:permute(dims...): a view of x with its dims in the given order (a permutation of 1..x:dim()).
function M.permute(x, ...)
  local xh, shape, strides = layout(x, "permute")
  local dims = list_arg("permute", "dims", ...)
  local nd = #shape
  if #dims ~= nd then
    raise(format("permute: dims: expected %d dims (a permutation of 1..%d), got %d", nd, nd, #dims))
  end
  local nshape, nstrides, seen = {}, {}, {}
  for i = 1, nd do
    local d = norm_dim(dims[i], nd, "permute", format("dims[%d]", i)) + 1
    if seen[d] then raise(format("permute: dims: dim %d is named twice", d)) end
    seen[d] = true
    nshape[i], nstrides[i] = shape[d], strides[d]
  end
  return core.view(xh, nshape, nstrides, offset_of(xh), "permute")
end

-- x:expand(sizes): a view of x with the given sizes: dims of size 1 repeat (stride 0) to any size,
-- new dims may be added in front, -1 keeps a size. No data is copied.
function M.expand(x, ...)
  local xh, shape, strides = layout(x, "expand")
  local sizes = list_arg("expand", "sizes", ...)
  local n = #sizes
  local nd = #shape
  if n < nd then
    raise(format("expand: sizes: %d sizes given for a tensor of %d dims (expected at least %d)", n, nd, nd))
  end
  local nshape, nstrides = {}, {}
  for i = 1, n do
    local v = sizes[i]
    local d = i - (n - nd)   -- x's dim under size i, or <= 0 for a new leading dim
    if not is_int(v) or v < -1 then
      raise(format("expand: sizes[%d]: expected a non-negative integer size or -1, got %s", i, describe(v)))
    end
    if d < 1 then
      if v == -1 then raise(format("expand: sizes[%d]: -1 cannot stand for a new dim", i)) end
      nshape[i], nstrides[i] = v, 0
    elseif v == -1 or v == shape[d] then
      nshape[i], nstrides[i] = shape[d], strides[d]
    elseif shape[d] == 1 then
      nshape[i], nstrides[i] = v, 0
    else
      raise(format("expand: sizes[%d]: %d does not match x's size %d at dim %d (only dims of size 1 expand)",
                   i, v, shape[d], d))
    end
  end
  core.parse_shape(nshape, "expand", "sizes")
  return core.view(xh, nshape, nstrides, offset_of(xh), "expand")
end

-- x:squeeze([dim]): a view of x without its dims of size 1, or without dim when its size is 1
-- (x's shape otherwise, as PyTorch does).
function M.squeeze(x, dim)
  local xh, shape, strides = layout(x, "squeeze")
  local nd = #shape
  local only   -- the one dim to drop, when named
  if dim ~= nil then only = norm_dim(dim, nd == 0 and 1 or nd, "squeeze") + 1 end
  local nshape, nstrides = {}, {}
  for k = 1, nd do
    if not (shape[k] == 1 and (only == nil or only == k)) then
      nshape[#nshape + 1], nstrides[#nstrides + 1] = shape[k], strides[k]
    end
  end
  return core.view(xh, nshape, nstrides, offset_of(xh), "squeeze")
end

-- x:unsqueeze(dim): a view of x with a new dim of size 1 at position dim (1..x:dim()+1; negative
-- counts from the end, -1 appends).
function M.unsqueeze(x, dim)
  local xh, shape, strides = layout(x, "unsqueeze")
  local nd = #shape
  local d = norm_dim(dim, nd + 1, "unsqueeze") + 1
  if nd >= core.MAX_DIMS then
    raise(format("unsqueeze: x: has %d dims already, the most a tensor can have", nd))
  end
  -- the stride of the new dim is the extent of the dim it precedes (as PyTorch), 1 at the end
  local stride = d <= nd and shape[d] * strides[d] or 1
  table.insert(shape, d, 1)
  table.insert(strides, d, stride)
  return core.view(xh, shape, strides, offset_of(xh), "unsqueeze")
end

---------------------------------------------------------------------------------------------------
-- cs.where(mask, a, b)
---------------------------------------------------------------------------------------------------
-- The dtype a number or boolean takes beside a tensor of dtype `with` (nil: no tensor).
local function value_dtype(v, with)
  if type(v) == "boolean" then return with or BOOL end
  return with and ops.with_number(with, v) or F32
end

-- cs.where(mask, a, b): a where mask is true, b where it is false. a and b are tensors, numbers or
-- booleans; the three broadcast to one shape; the dtype promotes as for arithmetic.
function verbs.where(mask, a, b)
  local mh = check_tensor(mask, "where", "mask")
  if core.dtype_of(mh) ~= BOOL then
    raise(format("where: mask: expected a bool tensor, got %s (make one with a comparison such as x:gt(0))",
                 core.DTYPE_NAME[core.dtype_of(mh)]))
  end
  local dev = core.device_of(mh)
  local operands = { a, b }
  local names = { "a", "b" }
  local dts = {}
  for i = 1, 2 do
    local v = operands[i]
    if is_tensor(v) then
      local h = check_tensor(v, "where", names[i])
      if core.device_of(h) ~= dev then
        raise(format("where: %s: expected a tensor on mask's device (%s), got one on %s", names[i],
                     core.DEVICE_NAME[dev], core.DEVICE_NAME[core.device_of(h)]))
      end
      dts[i] = core.dtype_of(h)
    elseif type(v) ~= "number" and type(v) ~= "boolean" then
      raise(format("where: %s: expected a tensor, a number or a boolean, got %s", names[i], describe(v)))
    end
  end
  local odt
  if dts[1] and dts[2] then odt = ops.promote(dts[1], dts[2])
  elseif dts[1] then odt = value_dtype(b, dts[1])
  elseif dts[2] then odt = value_dtype(a, dts[2])
  else odt = ops.promote(value_dtype(a), value_dtype(b)) end
  -- values become 0-d tensors of the result's dtype; everything is then seen with the common shape
  for i = 1, 2 do
    if not dts[i] then
      local t = core.empty({}, odt, dev, "where")
      ops.fill_handle(check_tensor(t, "where", names[i]), operands[i], "where", names[i])
      operands[i] = t
    end
  end
  local ah, bh = check_tensor(operands[1], "where", "a"), check_tensor(operands[2], "where", "b")
  local shapes = { shape_of(mh), shape_of(ah), shape_of(bh) }
  local shape = ops.broadcast_shape(ops.broadcast_shape(shapes[1], shapes[2], "where"), shapes[3], "where")
  local out = core.empty(shape, odt, dev, "where")
  local vm = ops.expand(mask, shapes[1], shape, "where")
  local va = ops.expand(operands[1], shapes[2], shape, "where")
  local vb = ops.expand(operands[2], shapes[3], shape, "where")
  core.call("where", C.cs_where, check_tensor(out, "where", "out"), check_tensor(vm, "where", "mask"),
            check_tensor(va, "where", "a"), check_tensor(vb, "where", "b"))
  return out
end

return verbs

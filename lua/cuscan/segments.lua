-- cuscan.segments: segmented scans given as segment ids. cs.segment_ids_to_reset turns ids into the
-- bool reset tensor every scan takes (opts.reset): true at the first element of each run of equal
-- ids, met in the scan's direction. Two element-wise calls into views of one fresh tensor: the
-- runs' first elements are where an id differs from its neighbour, plus the line's first element.
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, format = core.raise, string.format
local tonumber, type = tonumber, type
local check_tensor = core.check_tensor
local I32, I64, BOOL = core.I32, core.I64, core.BOOL
local DTYPE_NAME = core.DTYPE_NAME

local NE = tonumber(C.CS_NE)
local S = {}

-- Checks that idsh (a handle) holds segment ids: an int32 or int64 tensor.
function S.check_ids(idsh, fname, argname)
  local dt = core.dtype_of(idsh)
  if dt ~= I32 and dt ~= I64 then
    raise(format("%s: %s: expected an int32 or int64 tensor of segment ids, got %s", fname, argname, DTYPE_NAME[dt]))
  end
end

-- A view of the handle t: `count` elements of dim d (0-based) from index `first` (0-based).
local function slice(t, d, first, count, fname)
  local shape, strides = core.shape_of(t), core.strides_of(t)
  local offset = tonumber(C.cs_tensor_offset(t)) + first * strides[d + 1]
  shape[d + 1] = count
  return check_tensor(core.view(t, shape, strides, offset, fname), fname, "view")
end

-- The reset tensor of the ids handle along the 0-based dim d: a new bool tensor laid out as ids.
function S.reset_of(idsh, d, reverse, fname)
  local reset = core.empty_like(idsh, BOOL, core.device_of(idsh), fname)
  local rh = check_tensor(reset, fname, "reset")
  if core.numel_of(idsh) == 0 then return reset end
  if core.ndim_of(idsh) == 0 then  -- a line of one element
    core.call(fname, C.cs_fill_int64, rh, 1)
    return reset
  end
  local n = tonumber(C.cs_tensor_size(idsh, d))
  -- forward: element i starts a run when ids[i] ~= ids[i - 1], and element 1 always; reverse: when
  -- ids[i] ~= ids[i + 1], and element n always
  local head = reverse and n - 1 or 0
  core.call(fname, C.cs_fill_int64, slice(rh, d, head, 1, fname), 1)
  if n > 1 then
    local lo, hi = slice(idsh, d, 0, n - 1, fname), slice(idsh, d, 1, n - 1, fname)
    core.call(fname, C.cs_binary, slice(rh, d, reverse and 0 or 1, n - 1, fname), hi, lo, NE)
  end
  return reset
end

-- cs.segment_ids_to_reset(ids, dim[, opts]): opts.reverse gives the reset a reverse scan needs.
function S.segment_ids_to_reset(ids, dim, opts)
  local fname = "segment_ids_to_reset"
  local idsh = check_tensor(ids, fname, "ids")
  S.check_ids(idsh, fname, "ids")
  local nd = core.ndim_of(idsh)
  if nd == 0 and dim ~= 1 and dim ~= -1 and core.is_int(dim) then
    raise(format("%s: dim: %.0f is out of range for a 0-d tensor (expected 1 or -1)", fname, dim))
  end
  local d = core.norm_dim(dim, nd == 0 and 1 or nd, fname)
  local reverse = false
  if type(opts) ~= "nil" then
    core.check_opts(opts, { reverse = true }, fname)
    reverse = core.check_bool_opt(opts.reverse, fname, "reverse")
  end
  return S.reset_of(idsh, d, reverse, fname)
end

return S

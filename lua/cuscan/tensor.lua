-- cuscan.tensor: the metatable of tensors (core.tensor_mt; a tensor is a userdata proxy whose
-- handle only cuscan.core can reach). Methods come from the parts of the module (views, data,
-- scan, ops); x.dtype and x.device are read-only fields; the arithmetic operators and tostring are
-- metamethods. Every handle the module creates is tied to the garbage collector with
-- ffi.gc(handle, cs_tensor_free).
local core = require("cuscan.core")
core.own_file()
require("cuscan.views")
require("cuscan.scan")
local data = require("cuscan.data")
local ops = require("cuscan.ops")
local fmt = require("cuscan.format")

local C = core.C
local M = core.methods
local tonumber = tonumber
local DTYPE_NAME = core.DTYPE_NAME
local check_tensor = core.check_tensor

M.totable = data.totable
M.item = data.item

-- Indexing as in torch7 and PyTorch: x[i] is x:select(1, i), a view, or for a 1-d tensor the
-- element itself; x[i] = v writes v there (a number or boolean, or a tensor broadcasting to x[i]'s
-- shape); #x is the size of dim 1. i is 1-based, negative from the end.
local raise, describe, format = core.raise, core.describe, string.format

-- x[i] as a view (0-d for a 1-d x), after checks named for the indexing expression.
local function index_view(x, i, fname)
  local xh = check_tensor(x, fname, "x")
  local nd = C.cs_tensor_ndim(xh)
  if nd == 0 then raise(format("%s: x: a 0-d tensor cannot be indexed (use x:item())", fname)) end
  if not core.is_int(i) then raise(format("%s: i: expected an integer index, got %s", fname, describe(i))) end
  local size = tonumber(C.cs_tensor_size(xh, 0))
  if i == 0 or i > size or i < -size then
    raise(format("%s: i: %.0f is out of range for dim 1 of size %d (expected 1..%d or -%d..-1%s)", fname, i, size,
                 size, size, i == 0 and "; indices are 1-based" or ""))
  end
  return M.select(x, 1, i), nd
end

local function get_index(x, i)
  local v, nd = index_view(x, i, "x[i]")
  if nd == 1 then return M.item(v) end
  return v
end

local function set_index(x, i, v)
  local fname = "x[i] = v"
  -- x[i] of an expanded x may itself be free of stride 0 (one element of a repeated row), yet it
  -- shares memory with the rest of x: a write through x is refused as a write into x would be
  local xh = check_tensor(x, fname, "x")
  local shape, strides = core.shape_of(xh), core.strides_of(xh)
  for d = 1, #shape do
    if shape[d] > 1 and strides[d] == 0 then
      raise(format("%s: x: cannot write into an expanded view (dim %d of size %d has stride 0, so its elements "
                   .. "share memory); write into a copy (clone()) instead", fname, d, shape[d]))
    end
  end
  local view = index_view(x, i, fname)
  local vh = check_tensor(view, fname, "x")
  if core.is_tensor(v) then
    -- leading size-1 dims of v beyond x[i]'s dims are dropped (x[i] = cs.tensor({5}) on a 1-d x)
    local nd, from = C.cs_tensor_ndim(vh), core.shape_of(check_tensor(v, fname, "v"))
    local lead = 0
    while #from - lead > nd and from[lead + 1] == 1 do lead = lead + 1 end
    if lead > 0 then v = M.reshape(v, { unpack(from, lead + 1) }) end
    ops.copy_into(vh, v, fname, "v", "x[i]'s")
  elseif type(v) == "number" or type(v) == "boolean" or type(v) == "cdata" then
    ops.fill_handle(vh, v, fname, "v")
  else
    raise(format("%s: v: expected a number, a boolean or a tensor, got %s", fname, describe(v)))
  end
end

local mt = core.tensor_mt
mt.__index = function(x, k)
  local m = M[k]
  if m ~= nil then return m end
  if k == "dtype" then return DTYPE_NAME[core.dtype_of(check_tensor(x, "dtype", "x", true))] end
  if k == "device" then return core.device_label(core.device_of(check_tensor(x, "device", "x", true))) end
  if k == "device_index" then return core.gpu_index(core.device_of(check_tensor(x, "device_index", "x", true))) end
  if k == "device_type" then
    return core.device_of(check_tensor(x, "device_type", "x", true)) == core.CPU and "cpu" or "cuda"
  end
  if type(k) == "number" then return get_index(x, k) end
  -- only names read as missing fields; any other key (an int64_t index, say) would otherwise be
  -- a silent nil where an element was meant
  if type(k) ~= "string" then index_view(x, k, "x[i]") end   -- (raises: k is no integer)
  return nil
end
mt.__newindex = function(x, k, v)
  if type(k) == "number" then return set_index(x, k, v) end
  raise(format("tensor: cannot set field %s (tensors have no writable fields)", describe(k)))
end
mt.__len = function(x)
  local xh = check_tensor(x, "#x", "x")
  if C.cs_tensor_ndim(xh) == 0 then raise("#x: x: a 0-d tensor has no length (use x:numel() or x:item())") end
  return tonumber(C.cs_tensor_size(xh, 0))
end
mt.__tostring = fmt.tostring
for k, v in pairs(ops.meta) do mt[k] = v end

return M

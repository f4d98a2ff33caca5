-- cuscan.views: queries, views that share storage (transpose, narrow, select, reshape) and copies
-- (contiguous, clone, to, cpu, cuda).
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local tonumber, type = tonumber, type
local check_tensor, norm_dim, is_int = core.check_tensor, core.norm_dim, core.is_int
local SH, ST = core.SH, core.ST
local CPU = core.CPU

local M = core.methods

---------------------------------------------------------------------------------------------------
-- Queries
---------------------------------------------------------------------------------------------------
function M.shape(x)
  local xh = check_tensor(x, "shape", "x")
  return core.shape_of(xh)
end

function M.size(x, d)
  local xh = check_tensor(x, "size", "x")
  if d == nil then return core.shape_of(xh) end
  local nd = core.ndim_of(xh)
  return tonumber(C.cs_tensor_size(xh, norm_dim(d, nd, "size")))
end

function M.stride(x, d)
  local xh = check_tensor(x, "stride", "x")
  if d == nil then return core.strides_of(xh) end
  local nd = core.ndim_of(xh)
  return tonumber(C.cs_tensor_stride(xh, norm_dim(d, nd, "stride")))
end

function M.dim(x)
  local xh = check_tensor(x, "dim", "x")
  return core.ndim_of(xh)
end

function M.numel(x)
  local xh = check_tensor(x, "numel", "x")
  return core.numel_of(xh)
end

function M.is_contiguous(x)
  local xh = check_tensor(x, "is_contiguous", "x")
  return C.cs_tensor_is_contiguous(xh) ~= 0
end

---------------------------------------------------------------------------------------------------
-- Views
---------------------------------------------------------------------------------------------------
local function load_layout(xh)
  local nd = core.ndim_of(xh)
  for d = 0, nd - 1 do
    SH[d] = C.cs_tensor_size(xh, d)
    ST[d] = C.cs_tensor_stride(xh, d)
  end
  return nd
end

function M.transpose(x, d1, d2)
  local xh = check_tensor(x, "transpose", "x")
  local nd = core.ndim_of(xh)
  local a = norm_dim(d1, nd, "transpose", "d1")
  local b = norm_dim(d2, nd, "transpose", "d2")
  load_layout(xh)
  SH[a], SH[b] = SH[b], SH[a]
  ST[a], ST[b] = ST[b], ST[a]
  return core.view_from_sh(xh, nd, C.cs_tensor_offset(xh), "transpose")
end

-- x:narrow(d, start, length): elements start .. start+length-1 (1-based) of dim d.
function M.narrow(x, d, start, length)
  local xh = check_tensor(x, "narrow", "x")
  local nd = core.ndim_of(xh)
  local k = norm_dim(d, nd, "narrow")
  local size = tonumber(C.cs_tensor_size(xh, k))
  if not is_int(start) then
    raise(format("narrow: start: expected an integer, got %s", describe(start)))
  end
  if not is_int(length) or length < 0 then
    raise(format("narrow: length: expected a non-negative integer, got %s", describe(length)))
  end
  local s = start
  if s < 0 then s = size + s + 1 end
  if s < 1 or s > size + 1 then
    raise(format("narrow: start: %.0f is out of range for dim %d of size %d (expected 1..%d)", start, k + 1, size, size))
  end
  if s + length - 1 > size then
    raise(format("narrow: length: %.0f elements from %d run past the end of dim %d (size %d)", length, s, k + 1, size))
  end
  load_layout(xh)
  SH[k] = length
  local offset = C.cs_tensor_offset(xh) + (s - 1) * ST[k]
  if length == 0 then offset = C.cs_tensor_offset(xh) end
  return core.view_from_sh(xh, nd, offset, "narrow")
end

-- x:select(d, i): the slice at index i (1-based, negative from the end) of dim d, without that dim.
function M.select(x, d, i)
  local xh = check_tensor(x, "select", "x")
  local nd = core.ndim_of(xh)
  local k = norm_dim(d, nd, "select")
  local size = tonumber(C.cs_tensor_size(xh, k))
  if not is_int(i) then raise(format("select: index: expected an integer, got %s", describe(i))) end
  local j = i < 0 and size + i + 1 or i
  if j < 1 or j > size then
    raise(format("select: index: %.0f is out of range for dim %d of size %d", i, k + 1, size))
  end
  local offset = C.cs_tensor_offset(xh) + (j - 1) * C.cs_tensor_stride(xh, k)
  local n = 0
  for e = 0, nd - 1 do
    if e ~= k then
      SH[n] = C.cs_tensor_size(xh, e)
      ST[n] = C.cs_tensor_stride(xh, e)
      n = n + 1
    end
  end
  return core.view_from_sh(xh, nd - 1, offset, "select")
end

-- Strides that let x (shape, strides) be seen with new_shape without copying, or nil
-- (the algorithm of torch's computeStride: dims are grouped into chunks that are contiguous in x).
local function view_strides(shape, strides, new_shape, numel)
  local nd, nn = #shape, #new_shape
  local out = {}
  if numel == 0 then
    -- nothing to address: any packed strides do
    local s = 1
    for i = nn, 1, -1 do out[i] = s; s = s * math.max(new_shape[i], 1) end
    return out
  end
  local view_d = nn
  local chunk_base_stride = strides[nd] or 1
  local tensor_numel, view_numel = 1, 1
  for d = nd, 1, -1 do
    tensor_numel = tensor_numel * shape[d]
    if d == 1 or (shape[d - 1] ~= 1 and strides[d - 1] ~= tensor_numel * chunk_base_stride) then
      while view_d >= 1 and (view_numel < tensor_numel or new_shape[view_d] == 1) do
        out[view_d] = view_numel * chunk_base_stride
        view_numel = view_numel * new_shape[view_d]
        view_d = view_d - 1
      end
      if view_numel ~= tensor_numel then return nil end
      if d > 1 then
        chunk_base_stride = strides[d - 1]
        tensor_numel, view_numel = 1, 1
      end
    end
  end
  if view_d ~= 0 then return nil end
  return out
end

-- x:reshape(shape): a view when x's strides allow one, else a contiguous copy. One size may be -1.
function M.reshape(x, shape)
  local xh = check_tensor(x, "reshape", "x")
  -- every size, and their product, is checked before any arithmetic with them
  local _, known, infer_at = core.parse_shape(shape, "reshape", "shape", true)
  local numel = core.numel_of(xh)
  local new = {}
  for i = 1, #shape do new[i] = shape[i] end
  if infer_at then
    if known == 0 or numel % known ~= 0 then
      raise(format("reshape: shape: cannot infer the -1 size: %d elements do not divide into {%s}", numel,
                   core.sizes_text(shape, ", ")))
    end
    new[infer_at] = numel / known
    known = numel
  end
  if known ~= numel then
    raise(format("reshape: shape: {%s} holds %.0f elements, x has %d (shape %s)", core.sizes_text(shape, ", "),
                 known, numel, core.shape_str(core.shape_of(xh))))
  end
  local strides = view_strides(core.shape_of(xh), core.strides_of(xh), new, numel)
  if strides then
    return core.view(xh, new, strides, tonumber(C.cs_tensor_offset(xh)), "reshape")
  end
  local c = M.contiguous(x)
  local packed, s = {}, 1
  for i = #new, 1, -1 do packed[i] = s; s = s * new[i] end
  local ch = check_tensor(c, "reshape", "x")
  return core.view(ch, new, packed, tonumber(C.cs_tensor_offset(ch)), "reshape")
end

---------------------------------------------------------------------------------------------------
-- Copies
---------------------------------------------------------------------------------------------------
function M.contiguous(x)
  local xh = check_tensor(x, "contiguous", "x")
  if C.cs_tensor_is_contiguous(xh) ~= 0 then return x end
  local h = core.empty(core.shape_of(xh), core.dtype_of(xh), core.device_of(xh), "contiguous")
  core.call("contiguous", C.cs_copy, check_tensor(h, "contiguous", "out"), xh)
  return h
end

function M.clone(x)
  local xh = check_tensor(x, "clone", "x")
  local h = core.empty_like(xh, core.dtype_of(xh), core.device_of(xh), "clone")
  core.call("clone", C.cs_copy, check_tensor(h, "clone", "out"), xh)
  return h
end

local TO_OPTS = { device = true, dtype = true }

-- x:to(device), x:to(dtype) or x:to{device=, dtype=}: x itself when nothing changes, else a copy.
function M.to(x, what)
  local xh = check_tensor(x, "to", "x")
  local dtype = core.dtype_of(xh)
  local dev = core.device_of(xh)
  local new_dtype, new_dev = dtype, dev
  if type(what) == "string" then
    if core.DTYPE[what] then
      new_dtype = core.DTYPE[what]
    elseif what:match("^cuda") or what:match("^cpu") or what:match("^gpu") then
      new_dev = core.parse_device(what, "to", "device")
    else
      -- any other name is taken for a dtype cuscan lacks (x:to("float8")), not a device
      core.parse_dtype(what, "to")
    end
  elseif type(what) == "table" then
    core.check_opts(what, TO_OPTS, "to")
    if what.dtype ~= nil then new_dtype = core.parse_dtype(what.dtype, "to") end
    if what.device ~= nil then new_dev = core.parse_device(what.device, "to") end
  else
    raise(format("to: expected a device name, a dtype name or {device=, dtype=}, got %s", describe(what)))
  end
  if new_dtype == dtype and new_dev == dev then return x end
  local h = core.empty_like(xh, new_dtype, new_dev, "to")
  core.call("to", C.cs_copy, check_tensor(h, "to", "out"), xh)
  return h
end

function M.cpu(x)
  local xh = check_tensor(x, "cpu", "x")
  if core.device_of(xh) == CPU then return x end
  local h = core.empty_like(xh, core.dtype_of(xh), CPU, "cpu")
  core.call("cpu", C.cs_copy, check_tensor(h, "cpu", "out"), xh)
  return h
end

-- x:cuda([index]): x on GPU index (0-based; the default GPU when nil)
function M.cuda(x, index)
  local xh = check_tensor(x, "cuda", "x")
  if type(index) ~= "nil" and (type(index) ~= "number" or index ~= math.floor(index) or index < 0) then
    raise(format("cuda: index: expected a GPU index (0, 1, ...), got %s", describe(index)))
  end
  local dev = core.parse_device(type(index) == "number" and format("cuda:%d", index) or "cuda", "cuda",
                                type(index) == "number" and "index" or "device")
  if core.device_of(xh) == dev then return x end
  local h = core.empty_like(xh, core.dtype_of(xh), dev, "cuda")
  core.call("cuda", C.cs_copy, check_tensor(h, "cuda", "out"), xh)
  return h
end

-- x:free(): releases x's storage now (views of it keep theirs); any later use of x is an error.
function M.free(x)
  local xh = check_tensor(x, "free", "x", true)
  if C.cs_tensor_release(xh) ~= 0 then core.fail("free") end
end

function M.is_freed(x)
  local xh = check_tensor(x, "is_freed", "x", true)
  return C.cs_tensor_is_released(xh) ~= 0
end

return M

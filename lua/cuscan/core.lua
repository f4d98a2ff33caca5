-- cuscan.core: what every part of the module shares: the C library, errors raised at the caller's
-- line, dtype and device names, argument checks, tensor allocation with device-memory tracking
-- and the garbage-collector pressure that goes with it.
local ffi = require("ffi")
local lib = require("cuscan.ffi")

local C = lib.C
local core = { C = C, ffi = ffi, lib_path = lib.lib_path }

local type, tonumber, tostring, floor, huge = type, tonumber, tostring, math.floor, math.huge
local format = string.format
local getinfo = debug.getinfo
local ffi_gc, istype, ffi_string = ffi.gc, ffi.istype, ffi.string

---------------------------------------------------------------------------------------------------
-- Errors. Every file of the module registers its own source here; raise() walks the stack from its
-- caller upward past those files, so that an error points at the user's line however deep inside
-- the module (metamethods, helpers, nested calls) it was found.
---------------------------------------------------------------------------------------------------
local own_sources = {}

function core.own_file()
  own_sources[getinfo(2, "S").source] = true
end
core.own_file()

local function raise(msg)
  local level = 2
  while true do
    local info = getinfo(level, "S")
    if not info or not own_sources[info.source] then break end
    level = level + 1
  end
  error("cuscan: " .. msg, level)
end
core.raise = raise

local function last_error()
  return ffi_string(C.cs_last_error())
end
core.last_error = last_error

-- Raises the message of a failed C call, prefixed by the Lua function's name.
local function fail(fname)
  local msg = last_error()
  if msg == "" then msg = "failed" end
  raise(fname .. ": " .. msg)
end
core.fail = fail

-- A short description of a value for "expected X, got Y" messages.
local function describe(v)
  local t = type(v)
  if t == "nil" then return "nil" end
  if core.is_tensor(v) then return "a tensor" end
  if t == "number" then return "number " .. tostring(v) end
  if t == "string" then return format("string %q", #v > 40 and v:sub(1, 37) .. "..." or v) end
  if t == "boolean" then return "boolean " .. tostring(v) end
  if t == "cdata" then return "cdata " .. tostring(ffi.typeof(v)) end
  return "a " .. t
end
core.describe = describe

---------------------------------------------------------------------------------------------------
-- dtypes and devices
---------------------------------------------------------------------------------------------------
local F32, F64, I32, I64, BOOL, F16, BF16 = 0, 1, 2, 3, 4, 5, 6
core.F32, core.F64, core.I32, core.I64, core.BOOL, core.F16, core.BF16 = F32, F64, I32, I64, BOOL, F16, BF16
core.DTYPE = { float32 = F32, float64 = F64, int32 = I32, int64 = I64, bool = BOOL, float16 = F16, bfloat16 = BF16 }
core.DTYPE_NAME = { [F32] = "float32", [F64] = "float64", [I32] = "int32", [I64] = "int64", [BOOL] = "bool",
                    [F16] = "float16", [BF16] = "bfloat16" }
core.DTYPE_SIZE = { [F32] = 4, [F64] = 8, [I32] = 4, [I64] = 8, [BOOL] = 1, [F16] = 2, [BF16] = 2 }
core.IS_FLOAT = { [F32] = true, [F64] = true, [I32] = false, [I64] = false, [BOOL] = false, [F16] = true,
                  [BF16] = true }
-- promotion order, as torch: bool < int32 < int64 < float16, bfloat16 < float32 < float64 (float16
-- with bfloat16 gives float32: ops.promote)
core.RANK = { [BOOL] = 0, [I32] = 1, [I64] = 2, [F16] = 3, [BF16] = 3, [F32] = 4, [F64] = 5 }
-- float16 and bfloat16 elements are read and written as their bits
core.ELEM_PTR = {
  [F32] = ffi.typeof("float *"), [F64] = ffi.typeof("double *"), [I32] = ffi.typeof("int32_t *"),
  [I64] = ffi.typeof("int64_t *"), [BOOL] = ffi.typeof("uint8_t *"), [F16] = ffi.typeof("uint16_t *"),
  [BF16] = ffi.typeof("uint16_t *"),
}
-- The dtype Lua writes values of a dtype in: float64 for float16 and bfloat16, whose values C then
-- rounds (cs_copy), so that every way into them rounds by the C core's one rule.
function core.written_as(dtype)
  return (dtype == F16 or dtype == BF16) and F64 or dtype
end
-- A device is a number in Lua: CPU (0) for the host, 1 + i for GPU i ("cuda:i"). C takes the kind
-- (CS_CPU, CS_CUDA) and makes a CUDA tensor on the current GPU: core.on_device makes dev's GPU
-- current around a C call. "cuda" names the current default GPU, C's current GPU of this thread.
local CPU, CUDA_KIND = 0, 1
core.CPU = CPU
function core.kind(dev) return dev == CPU and CPU or CUDA_KIND end
function core.is_cuda(dev) return dev ~= CPU end
function core.gpu(i) return 1 + i end
function core.gpu_index(dev) return dev ~= CPU and dev - 1 or nil end
-- DEVICE_NAME[dev]: the full name, "cpu" or "cuda:i"
core.DEVICE_NAME = setmetatable({ [CPU] = "cpu" }, {
  __index = function(_, dev) return type(dev) == "number" and format("cuda:%d", dev - 1) or nil end,
})

local S_OOM = tonumber(C.CS_ERR_OUT_OF_MEMORY)
core.S_OOM = S_OOM

local cuda_ok = C.cs_cuda_available() ~= 0
core.cuda_ok = cuda_ok

function core.cuda_reason()
  return ffi_string(C.cs_cuda_unavailable_reason())
end

-- The current default GPU as a device (nil without CUDA).
function core.default_gpu()
  if not cuda_ok then return nil end
  return 1 + C.cs_cuda_get_device()
end

-- The name a tensor on dev reports as x.device: "cuda" on the current default GPU, "cuda:i" on
-- another, so that passing it as `device =` makes a tensor next to x.
function core.device_label(dev)
  if dev == CPU then return "cpu" end
  if dev == core.default_gpu() then return "cuda" end
  return core.DEVICE_NAME[dev]
end

-- Runs the C call fn(...) with dev's GPU current (the caller's GPU current again after); returns
-- its status. On the CPU it just runs it.
local cs_cuda_get_device, cs_cuda_set_device = C.cs_cuda_get_device, C.cs_cuda_set_device
function core.on_device(dev, fn, ...)
  if dev == CPU then return fn(...) end
  local prev = cs_cuda_get_device()
  if prev == dev - 1 then return fn(...) end
  local st = cs_cuda_set_device(dev - 1)
  if st ~= 0 then return st end
  st = fn(...)
  cs_cuda_set_device(prev)
  return st
end

local DTYPE_LIST = "float32, float64, float16, bfloat16, int32, int64 or bool"

function core.parse_dtype(v, fname, argname)
  local d = core.DTYPE[v]
  if d == nil then
    raise(format("%s: %s: expected a dtype (%s), got %s", fname, argname or "dtype", DTYPE_LIST, describe(v)))
  end
  return d
end

-- A device name: "cpu", "cuda" (the current default GPU) or "cuda:N" (0-based, as CUDA numbers them).
function core.parse_device(v, fname, argname)
  argname = argname or "device"
  local index = type(v) == "string" and v:match("^cuda:(%d+)$")
  if v ~= "cpu" and v ~= "cuda" and not index then
    raise(format("%s: %s: expected \"cpu\" or \"cuda\", got %s (\"cuda:N\" names GPU N, counted from 0)", fname,
                 argname, describe(v)))
  end
  if v == "cpu" then return CPU end
  if not cuda_ok then
    raise(format("%s: %s: CUDA is not available (%s)", fname, argname, core.cuda_reason()))
  end
  if not index then return core.default_gpu() end
  local i, count = tonumber(index), tonumber(C.cs_device_count())
  if i >= count then
    raise(format("%s: %s: %s does not exist: this machine has %d GPU%s (cuda:0%s)", fname, argname, v, count,
                 count == 1 and "" or "s", count > 1 and format(" to cuda:%d", count - 1) or ""))
  end
  return 1 + i
end

-- Checks that opts is nil or a table whose keys are all in `allowed` (a set), so that a misspelt
-- option is an error instead of being silently ignored.
-- (A NULL cdata compares equal to nil, hence the type test.)
function core.check_opts(opts, allowed, fname, argname)
  if type(opts) == "nil" then return nil end
  if type(opts) ~= "table" then
    raise(format("%s: %s: expected a table of options, got %s", fname, argname or "opts", describe(opts)))
  end
  for k in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for name in pairs(allowed) do names[#names + 1] = name end
      table.sort(names)
      raise(format("%s: %s: unknown option %s (expected %s)", fname, argname or "opts",
                   type(k) == "string" and ("'" .. k .. "'") or describe(k), table.concat(names, ", ")))
    end
  end
  return opts
end

function core.check_bool_opt(v, fname, name)
  if type(v) == "nil" then return false end
  if type(v) ~= "boolean" then
    raise(format("%s: %s: expected a boolean, got %s", fname, name, describe(v)))
  end
  return v
end

local function is_int(v)
  return type(v) == "number" and v == floor(v) and v > -huge and v < huge
end
core.is_int = is_int

---------------------------------------------------------------------------------------------------
-- Lua values as elements. Every way a Lua value becomes an element (cs.tensor, cs.full, x:fill,
-- cs.arange, the number in an element-wise op, x[i] = v) goes through check_element, so that one
-- rule holds everywhere: a float dtype takes any number; bool stores v ~= 0; an integer dtype
-- truncates fractions toward zero (as numpy and torch do) and refuses NaN, the infinities and
-- whatever lies outside its range, instead of wrapping or hitting C's undefined conversion.
---------------------------------------------------------------------------------------------------
local int64_ct, uint64_ct = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local INT_LIMITS = {  -- lowest and highest storable value, as numbers and as int64
  [I32] = { -2 ^ 31, 2 ^ 31 - 1, -0x80000000LL, 0x7fffffffLL },
  [I64] = { -2 ^ 63, 2 ^ 63 - 1024, -0x8000000000000000LL, 0x7fffffffffffffffLL },
}
core.INT_LIMITS = INT_LIMITS

local function out_of_range(v, dtype, fname, argname)
  local lim = INT_LIMITS[dtype]
  local shown = type(v) == "number" and format("%.17g", v) or tostring(v):gsub("U?LL$", "")
  raise(format("%s: %s: %s is out of range for %s (%s..%s)", fname, argname, shown, core.DTYPE_NAME[dtype],
               tostring(lim[3]):gsub("LL$", ""), tostring(lim[4]):gsub("LL$", "")))
end

-- v (a number, a boolean or an int64_t / uint64_t cdata) as an element of dtype: a number, or an
-- int64_t cdata for an exact integer given as one. Raises a cuscan: error naming argname otherwise.
function core.check_element(v, dtype, fname, argname)
  local tv = type(v)
  if tv == "boolean" then return v and 1 or 0 end
  if tv == "number" then
    if core.IS_FLOAT[dtype] then return v end
    if dtype == BOOL then return v ~= 0 and 1 or 0 end
    if v ~= v then raise(format("%s: %s: NaN cannot be stored in %s", fname, argname, core.DTYPE_NAME[dtype])) end
    if v == huge or v == -huge then
      raise(format("%s: %s: %s cannot be stored in %s", fname, argname, v > 0 and "inf" or "-inf", core.DTYPE_NAME[dtype]))
    end
    local w = v >= 0 and floor(v) or -floor(-v)
    local lim = INT_LIMITS[dtype]
    if w < lim[1] or w > lim[2] then out_of_range(v, dtype, fname, argname) end
    return w
  end
  if tv == "cdata" and (istype(int64_ct, v) or istype(uint64_ct, v)) then
    if core.IS_FLOAT[dtype] then return tonumber(v) end
    if dtype == BOOL then return v ~= 0 and 1 or 0 end
    local lim = INT_LIMITS[dtype]
    if istype(uint64_ct, v) then
      if v > lim[4] then out_of_range(v, dtype, fname, argname) end
    elseif v < lim[3] or v > lim[4] then
      out_of_range(v, dtype, fname, argname)
    end
    return int64_ct(v)
  end
  raise(format("%s: %s: expected a number or boolean, got %s", fname, argname, describe(v)))
end

---------------------------------------------------------------------------------------------------
-- Reading floats from tensor memory. LuaJIT stores numbers NaN-boxed and does not make the NaNs
-- it loads from C memory canonical: a NaN whose sign and top payload bits are set (a negated
-- canonical CUDA NaN, 0xffffffff, say) then reads as a tagged value instead of a number and
-- corrupts the VM. These read the element's bits through a uint32_t pointer, give Lua's own NaN
-- for any NaN, and convert the rest through a union.
---------------------------------------------------------------------------------------------------
local band, rshift = require("bit").band, require("bit").rshift
local NAN = 0 / 0
local f32box = ffi.new("union { uint32_t u; float f; }")
local f64box = ffi.new("union { uint32_t w[2]; double d; }")

-- element i of a float32 array given as uint32_t *
function core.read_f32(q, i)
  local b = q[i]
  if band(b, 0x7f800000) == 0x7f800000 and band(b, 0x007fffff) ~= 0 then return NAN end
  f32box.u = b
  return f32box.f
end

-- element i of a float64 array given as uint32_t * (little-endian halves)
function core.read_f64(q, i)
  local lo, hi = q[2 * i], q[2 * i + 1]
  if band(hi, 0x7ff00000) == 0x7ff00000 and (band(hi, 0x000fffff) ~= 0 or lo ~= 0) then return NAN end
  f64box.w[0] = lo
  f64box.w[1] = hi
  return f64box.d
end

-- element i of a float16 array given as uint16_t * (its bits); exact in a double
function core.read_f16(q, i)
  local b = q[i]
  local e, m = band(rshift(b, 10), 0x1f), band(b, 0x3ff)
  local v
  if e == 0x1f then
    if m ~= 0 then return NAN end
    v = huge
  elseif e == 0 then
    v = m * 2 ^ -24
  else
    v = (m + 1024) * 2 ^ (e - 25)
  end
  return b >= 0x8000 and -v or v
end

-- element i of a bfloat16 array given as uint16_t *: the top half of a float32
function core.read_bf16(q, i)
  local b = q[i]
  if band(b, 0x7f80) == 0x7f80 and band(b, 0x007f) ~= 0 then return NAN end
  f32box.u = b * 65536
  return f32box.f
end

---------------------------------------------------------------------------------------------------
-- tensors: type checks and shape facts
---------------------------------------------------------------------------------------------------
-- A tensor is a userdata proxy (newproxy) sharing one metatable, core.tensor_mt, which
-- cuscan.tensor fills in with the methods, the fields dtype and device, tostring, indexing, #x and
-- the operators. Its handle, a `cs_tensor *` tied to the collector with
-- ffi.gc(handle, cs_tensor_free), is out of reach of Lua code: the proxy's environment table
-- owns it, and a private table with weak keys and values finds it. So a handle cannot be read,
-- replaced or forged from Lua, and a foreign value is never taken for a tensor.
--
-- Why a userdata: LuaJIT 2.1 ignores __len on tables (#x), and a userdata has no fields to set.
-- Why the handle rather than the tensor is what C gets: the handle check_tensor returns keeps its
-- storage alive for as long as the caller holds it, even where a compiled trace treats the tensor
-- itself as dead; and since only the tensor's environment owns the handle, both go in the same
-- collection. (The handle cannot be the tensor: LuaJIT treats `pointer + number` as C pointer
-- arithmetic, never as __add.)
--
-- Convention in the module: x is a tensor, xh its handle for C calls. Helpers named *_of take
-- handles; check_tensor returns the handle; the constructors return tensors.
local proto = newproxy(true)
local tensor_mt = getmetatable(proto)
core.tensor_mt = tensor_mt
-- getmetatable(x) gives the shared metatable: a table or proxy given it is still no tensor (its
-- handle is what counts), and a tensor whose metatable was replaced with debug.setmetatable is no
-- longer taken for one.
local getmetatable = getmetatable
local handles = setmetatable({}, { __mode = "kv" })
local newproxy, setfenv = newproxy, debug.setfenv
local cs_tensor_free = C.cs_tensor_free
local cs_tensor_is_released = C.cs_tensor_is_released

-- A tensor owning the handle h (which must not be owned yet).
local function wrap(h)
  h = ffi_gc(h, cs_tensor_free)
  local x = newproxy(proto)
  setfenv(x, { h })
  handles[x] = h
  return x
end
core.wrap = wrap

local function is_tensor(v)
  return handles[v] ~= nil and getmetatable(v) == tensor_mt
end
core.is_tensor = is_tensor

-- The handle of the tensor argument `v`, or an error naming it. A freed tensor is an error
-- unless allow_freed (for the queries that still answer after x:free()).
local function check_tensor(v, fname, argname, allow_freed)
  local h = handles[v]
  if h == nil or getmetatable(v) ~= tensor_mt then
    raise(format("%s: %s: expected a tensor, got %s", fname, argname, describe(v)))
  end
  if not allow_freed and cs_tensor_is_released(h) ~= 0 then
    raise(format("%s: %s: tensor was freed", fname, argname))
  end
  return h
end
core.check_tensor = check_tensor

-- How the module reads a handle's dtype, device, number of dims and element count from C (as Lua
-- numbers); nothing else calls those C functions directly.
function core.dtype_of(t) return tonumber(C.cs_tensor_dtype(t)) end
function core.device_of(t)
  if C.cs_tensor_device(t) == CPU then return CPU end
  return 1 + C.cs_tensor_device_index(t)
end
function core.ndim_of(t) return C.cs_tensor_ndim(t) end
function core.numel_of(t) return tonumber(C.cs_tensor_numel(t)) end

function core.shape_of(t)
  local n = core.ndim_of(t)
  local s = {}
  for d = 1, n do s[d] = tonumber(C.cs_tensor_size(t, d - 1)) end
  return s
end

function core.strides_of(t)
  local n = core.ndim_of(t)
  local s = {}
  for d = 1, n do s[d] = tonumber(C.cs_tensor_stride(t, d - 1)) end
  return s
end

-- Sizes written in full (table.concat would print 2^53 as 9.007199254741e+15).
local function sizes_text(shape, sep)
  local parts = {}
  for i = 1, #shape do
    local v = shape[i]
    parts[i] = (type(v) == "number" and v == floor(v) and v > -huge and v < huge) and format("%.0f", v) or tostring(v)
  end
  return table.concat(parts, sep)
end
core.sizes_text = sizes_text

function core.shape_str(shape)
  if #shape == 0 then return "scalar" end
  return sizes_text(shape, "x")
end

function core.same_shape(a, b)
  local n = core.ndim_of(a)
  if n ~= core.ndim_of(b) then return false end
  for d = 0, n - 1 do
    if C.cs_tensor_size(a, d) ~= C.cs_tensor_size(b, d) then return false end
  end
  return true
end

-- Normalises a 1-based dim (negative counts from the end) to C's 0-based one.
function core.norm_dim(d, ndim, fname, argname)
  argname = argname or "dim"
  if not is_int(d) then
    raise(format("%s: %s: expected an integer dim, got %s", fname, argname, describe(d)))
  end
  if d >= 1 and d <= ndim then return d - 1 end
  if d < 0 and d >= -ndim then return ndim + d end
  if ndim == 0 then
    raise(format("%s: %s: %.0f is out of range for a tensor of 0 dims", fname, argname, d))
  end
  raise(format("%s: %s: %.0f is out of range for a tensor of %d dim%s (expected 1..%d or -%d..-1%s)",
               fname, argname, d, ndim, ndim == 1 and "" or "s", ndim, ndim,
               d == 0 and "; dims are 1-based" or ""))
end

-- Scratch arrays for shapes and strides handed to C (filled and used at once, never kept).
local SH = ffi.new("int64_t[8]")
local ST = ffi.new("int64_t[8]")
core.SH, core.ST = SH, ST
local MAX_DIMS = 8
core.MAX_DIMS = MAX_DIMS

local INT64_MAX = 0x7fffffffffffffffLL
local TWO63 = 2 ^ 63

-- Checks a shape table and copies it into SH. Returns ndim and the element count (a Lua number;
-- exact below 2^53). Each size must be an integer in 0 .. 2^63-1, and the sizes other than 0 must
-- multiply within int64 (numpy's rule: a contiguous stride is such a product, with or without an
-- empty dim elsewhere); the product is taken in int64 so that an overflow is found exactly. With
-- allow_infer one size may be -1 (counted as 1), and its position is returned third.
function core.parse_shape(shape, fname, argname, allow_infer)
  argname = argname or "shape"
  if type(shape) ~= "table" then
    raise(format("%s: %s: expected a table of sizes such as {2, 3}, got %s", fname, argname, describe(shape)))
  end
  local n = #shape
  for k in pairs(shape) do
    if type(k) ~= "number" or k < 1 or k > n or k ~= floor(k) then
      raise(format("%s: %s: expected a list of sizes, found key %s", fname, argname, describe(k)))
    end
  end
  if n > MAX_DIMS then
    raise(format("%s: %s: %d dims given, at most %d are supported", fname, argname, n, MAX_DIMS))
  end
  local infer_at
  for i = 1, n do
    local v = shape[i]
    if allow_infer and v == -1 then
      if infer_at then raise(format("%s: %s: only one size may be -1", fname, argname)) end
      infer_at = i
      v = 1
    elseif not is_int(v) or v < 0 then
      raise(format("%s: %s[%d]: expected a non-negative integer size%s, got %s", fname, argname, i,
                   allow_infer and " or -1" or "", describe(v)))
    elseif v >= TWO63 then
      raise(format("%s: %s[%d]: %.0f does not fit in int64", fname, argname, i, v))
    end
    SH[i - 1] = v
  end
  local count, zero = 1LL, false
  for i = 1, n do
    local v = tonumber(SH[i - 1])
    if v == 0 then
      zero = true
    elseif count > INT64_MAX / SH[i - 1] then
      raise(format("%s: %s: {%s} has more elements than int64 can count", fname, argname, sizes_text(shape, ", ")))
    else
      count = count * SH[i - 1]
    end
  end
  return n, zero and 0 or tonumber(count), infer_at
end

---------------------------------------------------------------------------------------------------
-- Allocation and device-memory tracking.
-- LuaJIT's collector sees only the small handles, not the bytes behind them. After each
-- allocation the bytes are added to an estimate of what cuscan holds on that device; when the
-- estimate passes a soft limit, the real figure is read from C and, if it is still above the
-- limit, garbage is collected and the limit adapts to what stayed alive (as cutorch's heap
-- tracking did). When an allocation fails for lack of memory, garbage is collected and the call
-- retried once before the error is raised.
---------------------------------------------------------------------------------------------------
local MiB = 1024 * 1024
-- per device (keyed by the device number; a GPU's entries appear with its first tensor)
local est = setmetatable({}, { __index = function() return 0 end })
local limit = setmetatable({}, { __index = function() return -1 end })  -- -1: not yet set
local floor_bytes = { [CPU] = 256 * MiB, [CUDA_KIND] = 1024 * MiB }
local collections = 0

local mi_use, mi_free, mi_total = ffi.new("int64_t[1]"), ffi.new("int64_t[1]"), ffi.new("int64_t[1]")

local function mem_read(dev)
  if core.on_device(dev, C.cs_memory_info, core.kind(dev), mi_use, mi_free, mi_total) ~= 0 then return nil end
  return tonumber(mi_use[0]), tonumber(mi_free[0]), tonumber(mi_total[0])
end
core.mem_read = mem_read

local function in_use(dev)
  if dev == CPU then return tonumber(C.cs_memory_in_use(CPU)) end
  local prev = cs_cuda_get_device()
  if prev == dev - 1 then return tonumber(C.cs_memory_in_use(CUDA_KIND)) end
  cs_cuda_set_device(dev - 1)
  local n = tonumber(C.cs_memory_in_use(CUDA_KIND))
  cs_cuda_set_device(prev)
  return n
end

local function set_limit(dev, live, total)
  local fl = math.min(floor_bytes[core.kind(dev)], math.max(total / 16, 16 * MiB))
  local grow = math.max(live, fl)                  -- let the heap double, or grow by the floor
  local room = math.max((total - live) * 0.75, 0)  -- but stay below the device's capacity
  limit[dev] = live + math.max(math.min(grow, room), 16 * MiB)
end

local function collect()
  collections = collections + 1
  collectgarbage("collect")
end
core.collect = collect

-- The bytes held come from a counter in C (no device call); the device's total is read once.
local totals = {}
local function rebalance(dev)
  local used = in_use(dev)
  local total = totals[dev]
  if not total then
    local _, _, t = mem_read(dev)
    if not t then return end
    total = t
    totals[dev] = t
  end
  if limit[dev] < 0 then set_limit(dev, used, total) end
  if used > limit[dev] then
    collect()
    used = in_use(dev)
    set_limit(dev, used, total)
  end
  est[dev] = used
end

local function note_alloc(dev, bytes)
  local e = est[dev] + bytes
  est[dev] = e
  if e > limit[dev] then rebalance(dev) end
end
core.note_alloc = note_alloc

-- cuda: the current default GPU's
function core.gc_stats()
  local gpu = core.default_gpu() or 1
  return { collections = collections, limit = { cpu = limit[CPU], cuda = limit[gpu] },
           estimate = { cpu = est[CPU], cuda = est[gpu] } }
end

local outp = ffi.new("cs_tensor *[1]")
local DTYPE_SIZE = core.DTYPE_SIZE

-- A tensor owning the handle C just wrote to outp.
local function take()
  local h = outp[0]
  outp[0] = nil
  return wrap(h)
end

local function adopt(dev, dtype)
  local n = tonumber(C.cs_tensor_numel(outp[0]))
  local t = take()
  note_alloc(dev, n * DTYPE_SIZE[dtype])
  return t
end

-- A new contiguous tensor; the shape must already be in SH (core.parse_shape).
function core.empty_from_sh(ndim, dtype, dev, fname)
  local kind = core.kind(dev)
  local st = core.on_device(dev, C.cs_empty, outp, ndim, SH, dtype, kind)
  if st ~= 0 then
    if st == S_OOM then
      -- SH may be reused by a finaliser-free path only; copy it first to be safe
      local saved = ffi.new("int64_t[8]")
      ffi.copy(saved, SH, 8 * 8)
      collect()  -- the retry's allocation trims the device pool itself if it must (alloc.c)
      st = core.on_device(dev, C.cs_empty, outp, ndim, saved, dtype, kind)
    end
    if st ~= 0 then fail(fname) end
  end
  return adopt(dev, dtype)
end

-- A new contiguous tensor of the given shape table (already checked).
function core.empty(shape, dtype, dev, fname)
  local n = #shape
  for i = 1, n do SH[i - 1] = shape[i] end
  return core.empty_from_sh(n, dtype, dev, fname)
end

-- A new tensor shaped like `like` (a handle), laid out in like's dim order.
function core.empty_like(like, dtype, dev, fname)
  local kind = core.kind(dev)
  local st = core.on_device(dev, C.cs_empty_like, outp, like, dtype, kind)
  if st ~= 0 then
    if st == S_OOM then
      collect()
      st = core.on_device(dev, C.cs_empty_like, outp, like, dtype, kind)
    end
    if st ~= 0 then fail(fname) end
  end
  return adopt(dev, dtype)
end

-- A view of base's storage (base a handle): shape and strides in SH and ST.
function core.view_from_sh(base, ndim, offset, fname)
  if C.cs_as_strided(outp, base, ndim, SH, ST, offset) ~= 0 then fail(fname) end
  return take()
end

-- A view with the given shape and strides tables.
function core.view(base, shape, strides, offset, fname)
  local n = #shape
  for i = 1, n do
    SH[i - 1] = shape[i]
    ST[i - 1] = strides[i]
  end
  return core.view_from_sh(base, n, offset, fname)
end

-- Runs a C call that may allocate (a staging copy, a temporary): on a lack of memory, collect
-- garbage and try once more. Raises the C message on failure.
function core.call(fname, fn, ...)
  local st = fn(...)
  if st ~= 0 then
    if st == S_OOM then
      collect()
      st = fn(...)
    end
    if st ~= 0 then fail(fname) end
  end
end

-- Keeps the tensor t alive up to this point. A raw pointer into a tensor's storage is valid only
-- while the tensor lives, and a compiled trace may treat a local that is not used again as dead,
-- letting the collector free the storage under the pointer; an FFI call cannot be optimised away.
local cs_tensor_ndim = C.cs_tensor_ndim
function core.keep(t)
  local h = handles[t]
  if h ~= nil then cs_tensor_ndim(h) end
end

-- The methods table of the tensor metatype; the parts of the module fill it in.
core.methods = {}

return core

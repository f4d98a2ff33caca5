-- cuscan: n-dimensional tensors on the CPU and CUDA devices, with cumulative sums, products,
-- maxima, minima and log-sum-exps along any dim. `local cs = require("cuscan")`.
--
-- This file holds the module table: constructors, the default device, random seeds, scans in
-- function form, result checks, and device and memory queries. Tensor methods live in
-- cuscan.views (queries, views, copies), cuscan.data (totable, item), cuscan.scan (cumsum,
-- cumprod, cummax, cummin, logcumsumexp; cuscan.segments turns segment ids into resets),
-- cuscan.ops (arithmetic, comparisons, reductions, cat, fill, copy) and cuscan.format (printing);
-- cuscan.core has what they share.
--
-- The module needs LuaJIT's FFI. Under another Lua the check below is the first thing that runs,
-- so this file must parse under every Lua (no LuaJIT-only syntax such as 64-bit literals here).
if type(rawget(_G, "jit")) ~= "table" then
  error("cuscan: LuaJIT is needed (this is " .. tostring(_VERSION) .. "); run busted under it with " ..
        "`busted --lua=luajit`, or with a .busted file beside the specs saying lua = \"luajit\" " ..
        "(as cuscan's own .busted does)", 0)
end
local ffi = require("ffi")
local bit = require("bit")
local core = require("cuscan.core")
core.own_file()
require("cuscan.tensor")
local data = require("cuscan.data")
local ops = require("cuscan.ops")
local scan = require("cuscan.scan")
local verbs = require("cuscan.verbs")

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local type, tonumber = type, tonumber
local CPU = core.CPU
local F32, F64, I32, I64, BOOL = core.F32, core.F64, core.I32, core.I64, core.BOOL

local cs = {}

cs.version = ffi.string(C.cs_version())
cs.dtypes = { "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16" }

---------------------------------------------------------------------------------------------------
-- Devices
---------------------------------------------------------------------------------------------------
function cs.cuda_available() return core.cuda_ok end

-- Why CUDA cannot be used ("" when it can).
function cs.cuda_unavailable_reason() return core.cuda_reason() end

-- The default device is the CPU or "cuda": the current default GPU, which is C's current GPU (so
-- that "cuda" in every call, C's included, means the same GPU); "cuda:N" makes GPU N that GPU.
local default_is_cuda = core.cuda_ok

local function set_default(device, fname, argname)
  local dev = core.parse_device(device, fname, argname)
  if dev ~= CPU and C.cs_cuda_set_device(core.gpu_index(dev)) ~= 0 then core.fail(fname) end
  default_is_cuda = dev ~= CPU
end

do
  local env = os.getenv("CUSCAN_DEVICE")
  if env and env ~= "" then set_default(env, "CUSCAN_DEVICE", "environment variable") end
end

local function default_dev()
  return default_is_cuda and core.default_gpu() or CPU
end

-- "cpu" or "cuda" (the current default GPU: its index is cs.default_gpu())
function cs.default_device() return default_is_cuda and "cuda" or "cpu" end

function cs.set_default_device(device) set_default(device, "set_default_device") end

-- The number of GPUs cuscan can use (0 without CUDA).
function cs.device_count() return tonumber(C.cs_device_count()) end

-- The index of the current default GPU, the one "cuda" names (nil without CUDA).
function cs.default_gpu() return core.cuda_ok and core.gpu_index(core.default_gpu()) or nil end

---------------------------------------------------------------------------------------------------
-- Constructors
---------------------------------------------------------------------------------------------------
local CTOR_OPTS = { dtype = true, device = true, devices = true, shard_dim = true }
local RAND_OPTS = { dtype = true, device = true, seed = true, devices = true, shard_dim = true }
local shard = require("cuscan.shard")

-- With opts.devices a constructor makes a sharded tensor, each shard made where it lives by
-- make(shard_shape, opts_of_shard, k, offset_along_shard_dim).
local function sharded(opts) return type(opts) == "table" and opts.devices ~= nil end
local function make_sharded(shape, opts, fname, make)
  if opts.device ~= nil then
    raise(format("%s: opts: give device or devices, not both", fname))
  end
  return shard.create(shape, opts, fname, function(sub, dev, k, at)
    local o = {}
    for key, v in pairs(opts) do if key ~= "devices" and key ~= "shard_dim" then o[key] = v end end
    o.device = dev
    return make(sub, o, k, at)
  end)
end

local function ctor_opts(opts, allowed, fname)
  if type(opts) == "nil" then return nil, default_dev() end
  core.check_opts(opts, allowed, fname)
  local dtype = opts.dtype ~= nil and core.parse_dtype(opts.dtype, fname) or nil
  local dev = opts.device ~= nil and core.parse_device(opts.device, fname) or default_dev()
  return dtype, dev
end

local function new_tensor(shape, dtype, dev, fname)
  local nd = core.parse_shape(shape, fname)
  return core.empty_from_sh(nd, dtype, dev, fname)
end

-- cs.tensor(data[, opts]): a tensor from a nested table (booleans give bool; numbers float32
-- unless opts.dtype says otherwise), from a number (0-d), or a copy of a tensor.
local TENSOR_OPTS = { dtype = true, device = true }
function cs.tensor(value, opts)
  local dtype, dev = ctor_opts(opts, TENSOR_OPTS, "tensor")
  if value == nil then raise("tensor: data: expected a nested table of numbers or booleans, got nil") end
  return data.from_table(value, dtype, dev, "tensor")
end

-- cs.zeros / cs.ones: a new tensor of one integer value, on one device or on shards
local function filled(name, value)
  return function(shape, opts)
    if sharded(opts) then
      core.check_opts(opts, CTOR_OPTS, name)
      return make_sharded(shape, opts, name, function(sub, o) return cs[name](sub, o) end)
    end
    local dtype, dev = ctor_opts(opts, CTOR_OPTS, name)
    local t = new_tensor(shape, dtype or F32, dev, name)
    core.call(name, C.cs_fill_int64, core.check_tensor(t, name, "x"), value)
    return t
  end
end
cs.zeros = filled("zeros", 0)
cs.ones = filled("ones", 1)

-- cs.empty(shape[, opts]): a new tensor whose elements are not set (whatever the memory held).
function cs.empty(shape, opts)
  if sharded(opts) then
    core.check_opts(opts, CTOR_OPTS, "empty")
    return make_sharded(shape, opts, "empty", function(sub, o) return cs.empty(sub, o) end)
  end
  local dtype, dev = ctor_opts(opts, CTOR_OPTS, "empty")
  return new_tensor(shape, dtype or F32, dev, "empty")
end

function cs.full(shape, value, opts)
  if sharded(opts) then
    core.check_opts(opts, CTOR_OPTS, "full")
    return make_sharded(shape, opts, "full", function(sub, o) return cs.full(sub, value, o) end)
  end
  local dtype, dev = ctor_opts(opts, CTOR_OPTS, "full")
  if dtype == nil then dtype = type(value) == "boolean" and BOOL or F32 end
  core.check_element(value, dtype, "full", "value")
  local t = new_tensor(shape, dtype, dev, "full")
  ops.fill_handle(core.check_tensor(t, "full", "x"), value, "full", "value")
  return t
end

-- The module's random generator: each cs.rand without a seed takes the next seed from a
-- splitmix64 sequence that cs.manual_seed(n) restarts. It starts from a fixed seed, so a script
-- draws the same numbers on every run unless it seeds otherwise.
-- (64-bit constants are built from their 32-bit halves, which every Lua parses.)
local function u64(hi, lo) return ffi.new("uint64_t", hi) * 0x100000000 + lo end
local DEFAULT_SEED = u64(0x3D30, 0xF19CD101)
local GOLDEN, MIX1, MIX2 = u64(0x9E3779B9, 0x7F4A7C15), u64(0xBF58476D, 0x1CE4E5B9), u64(0x94D049BB, 0x133111EB)
local gen = ffi.new("uint64_t[1]", DEFAULT_SEED)

local function next_seed()
  gen[0] = gen[0] + GOLDEN
  local z = gen[0]
  z = bit.bxor(z, bit.rshift(z, 30)) * MIX1
  z = bit.bxor(z, bit.rshift(z, 27)) * MIX2
  return bit.bxor(z, bit.rshift(z, 31))
end

local function check_seed(seed, fname)
  if type(seed) == "number" then
    if not core.is_int(seed) or seed < 0 or seed >= 2 ^ 64 then
      raise(format("%s: seed: expected a non-negative integer, got %s", fname, describe(seed)))
    end
    return ffi.new("uint64_t", seed)
  end
  if type(seed) == "cdata" and (ffi.istype("uint64_t", seed) or ffi.istype("int64_t", seed)) then
    return ffi.new("uint64_t", seed)
  end
  raise(format("%s: seed: expected a non-negative integer, got %s", fname, describe(seed)))
end

-- cs.manual_seed(n): restarts the module generator, so later unseeded cs.rand calls repeat.
function cs.manual_seed(seed)
  gen[0] = check_seed(seed, "manual_seed")
end

-- A float tensor filled by a seeded generator of the C core (cs_rand, cs_randn).
local function random_tensor(shape, opts, fname, fill)
  if sharded(opts) then
    -- each shard draws its own stream: the seed (given, else the module's next) mixed with the
    -- shard's index, so the shards differ and a seeded call repeats
    core.check_opts(opts, RAND_OPTS, fname)
    local seed = opts.seed ~= nil and check_seed(opts.seed, fname) or next_seed()
    return make_sharded(shape, opts, fname, function(sub, o, k)
      o.seed = seed + ffi.new("uint64_t", k) * GOLDEN
      return random_tensor(sub, o, fname, fill)
    end)
  end
  local dtype, dev = ctor_opts(opts, RAND_OPTS, fname)
  dtype = dtype or F32
  if not core.IS_FLOAT[dtype] then
    raise(format("%s: dtype: expected a float dtype (float32, float64, float16 or bfloat16), got %s", fname,
                 core.DTYPE_NAME[dtype]))
  end
  local seed = (opts and opts.seed ~= nil) and check_seed(opts.seed, fname) or next_seed()
  local t = new_tensor(shape, dtype, dev, fname)
  core.call(fname, fill, core.check_tensor(t, fname, "out"), seed)
  return t
end

-- cs.rand(shape[, {seed=, dtype=, device=}]): uniform numbers in [0, 1). With a seed, the same
-- tensor on either device (Philox keyed by the seed, counting elements in row-major order).
function cs.rand(shape, opts) return random_tensor(shape, opts, "rand", C.cs_rand) end

-- cs.randn(shape[, {seed=, dtype=, device=}]): standard normal numbers (Box-Muller over the same
-- counter-based generator as cs.rand, on a stream of its own).
function cs.randn(shape, opts) return random_tensor(shape, opts, "randn", C.cs_randn) end

-- cs.arange(n[, opts]) gives 0, 1, ..., n-1; cs.arange(start, stop[, step][, opts]) gives
-- start, start+step, ... up to but not including stop, as numpy and torch do. float32 by default.
function cs.arange(a, b, c, d)
  local start, stop, step, opts = 0, nil, 1, nil
  if type(b) == "number" then
    start, stop = a, b
    if type(c) == "number" then step, opts = c, d else opts = c end
  else
    stop, opts = a, b
  end
  local dtype, dev = ctor_opts(opts, CTOR_OPTS, "arange")
  dtype = dtype or F32
  for _, v in ipairs({ { "start", start }, { "stop", stop }, { "step", step } }) do
    local x = v[2]
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then
      raise(format("arange: %s: expected a finite number, got %s", v[1], describe(x)))
    end
    if not core.IS_FLOAT[dtype] and not core.is_int(x) then
      raise(format("arange: %s: expected an integer for dtype %s, got %s", v[1], core.DTYPE_NAME[dtype], describe(x)))
    end
  end
  if step == 0 then raise("arange: step: must not be 0") end
  local n = math.ceil((stop - start) / step)
  if n < 0 then n = 0 end
  if n >= 2 ^ 63 then
    raise(format("arange: %.17g to %.17g by %.17g gives more elements than int64 can count", start, stop, step))
  end
  if not core.IS_FLOAT[dtype] and n > 0 then
    -- the first and last elements bound the rest; C steps in int64
    core.check_element(start, dtype, "arange", "start")
    core.check_element(step, I64, "arange", "step")
    core.check_element(start + (n - 1) * step, dtype, "arange", "last element")
  end
  if sharded(opts) then
    -- shard k holds elements at .. at+n-1 of the whole range, each computed as the whole range
    -- computes it (start + i * step, in float64 for floats)
    return make_sharded({ n }, opts, "arange", function(sub, o, _, at)
      if not core.IS_FLOAT[dtype] then return cs.arange(start + at * step, start + (at + sub[1]) * step, step, o) end
      local i = cs.arange(at, at + sub[1], 1, { dtype = "float64", device = o.device })
      return ((i * step) + start):to(core.DTYPE_NAME[dtype])
    end)
  end
  local t = new_tensor({ n }, dtype, dev, "arange")
  core.call("arange", C.cs_arange, core.check_tensor(t, "arange", "x"), start, step)
  return t
end

---------------------------------------------------------------------------------------------------
-- Scans (function forms of the methods), toolkit functions, checks
---------------------------------------------------------------------------------------------------
-- the function forms take sharded tensors too (cuscan.shard)
for _, name in ipairs({ "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp" }) do
  local plain = scan[name]
  cs[name] = function(x, ...)
    if shard.is_sharded(x) then return x[name](x, ...) end
    return plain(x, ...)
  end
end
cs.segment_ids_to_reset = scan.segment_ids_to_reset
cs.explain = scan.explain
cs.force_family = scan.force_family
cs.cat = ops.cat
cs.shard = shard.shard
cs.shard_local = shard.shard_local
cs.shard_sizes = function(n, parts)
  if not core.is_int(n) or n < 0 then raise(format("shard_sizes: n: expected a non-negative integer, got %s", describe(n))) end
  if not core.is_int(parts) or parts < 1 or parts > 2 ^ 24 then
    raise(format("shard_sizes: parts: expected a positive integer up to 2^24, got %s", describe(parts)))
  end
  return shard.sizes(n, parts)
end
cs.is_sharded = shard.is_sharded
cs.distributed = require("cuscan.dist").distributed
cs.allclose = ops.allclose
cs.max_abs_diff = ops.max_abs_diff
cs.where = verbs.where
cs.from_dlpack = require("cuscan.dlpack").from_dlpack
cs.set_printoptions = require("cuscan.format").set_printoptions

local files = require("cuscan.files")

-- cs.save(path, x[, opts]) and cs.load(path[, opts]): .npy, .csv and .txt files (cuscan.files).
cs.save = files.save
function cs.load(path, opts) return files.load(path, opts, cs.default_device()) end

function cs.is_tensor(v) return core.is_tensor(v) end

---------------------------------------------------------------------------------------------------
-- Device and memory
---------------------------------------------------------------------------------------------------
local comm = require("cuscan.comm")
cs.comm_unique_id = comm.unique_id
cs.comm_init_all = comm.init_all
cs.comm_init_rank = comm.init_rank
cs.comm_group = comm.group

local event = require("cuscan.event")

-- cs.event([device]): a timing event (e:record(), e:elapsed(later) in milliseconds); on CUDA the
-- time between two events is device time.
function cs.event(device) return event.new(device, default_dev()) end

-- A GPU named by device (the default GPU when nil), for the calls about one GPU.
local function gpu_arg(device, fname)
  if device == nil then return core.default_gpu() end
  local dev = core.parse_device(device, fname)
  if dev == CPU then raise(format("%s: device: expected a GPU (\"cuda\" or \"cuda:N\"), got \"cpu\"", fname)) end
  return dev
end

-- cs.synchronize([device]): waits for the work queued on the GPU (the default GPU unless named); an
-- asynchronous fault is reported here.
function cs.synchronize(device)
  local dev = gpu_arg(device, "synchronize")
  if dev and core.on_device(dev, C.cs_synchronize) ~= 0 then core.fail("synchronize") end
end

-- cs.device_info([device]): a table describing the GPU (the default GPU unless named), or nil when
-- there is none.
function cs.device_info(device)
  local dev = gpu_arg(device, "device_info")
  if not dev then return nil end
  local p = ffi.new("cs_device_properties")
  if core.on_device(dev, C.cs_device_info, p) ~= 0 then core.fail("device_info") end
  return {
    index = core.gpu_index(dev),
    name = ffi.string(p.name),
    total_memory = tonumber(p.total_memory),
    memory = tonumber(p.total_memory),
    compute_capability = format("%d.%d", p.major, p.minor),
    major = p.major,
    minor = p.minor,
    multiprocessors = p.multiprocessors,
    l2_cache_bytes = tonumber(p.l2_cache_bytes),
    driver_version = p.driver_version,
    runtime_version = p.runtime_version,
  }
end

-- cs.memory_info([device]): { in_use = bytes cuscan holds in live tensors, free, total } for the
-- device (the default one unless named); on the CPU free and total are the host's memory.
function cs.memory_info(device)
  local dev = device == nil and default_dev() or core.parse_device(device, "memory_info")
  local in_use, free, total = core.mem_read(dev)
  if not in_use then core.fail("memory_info") end
  return { in_use = in_use, free = free, total = total, device = core.device_label(dev) }
end

-- cs.memory_trim([device]): hands back memory cuscan keeps cached for reuse (the device pool's free
-- blocks; on the CPU, freed host blocks of 8 MiB and more kept for the next tensor of that size).
function cs.memory_trim(device)
  local dev = device == nil and default_dev() or core.parse_device(device, "memory_trim")
  if core.on_device(dev, C.cs_memory_trim, core.kind(dev)) ~= 0 then core.fail("memory_trim") end
end

return cs

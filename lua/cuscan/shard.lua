-- cuscan.shard: tensors split along one dim over several devices (sharded tensors). A sharded tensor
-- holds plain tensors, its shards, one per device of its list (or, in the multi-process mode of
-- cuscan.dist, the one shard of this process); it answers the queries of a tensor, runs element-wise
-- ops shard by shard and every scan along any dim. Along the sharded dim a scan is a totals pass per
-- shard, an all-gather of the per-line totals (cuscan.group), a fold of the totals before each shard
-- into its carry, and a scan of each shard from its carry.
local core = require("cuscan.core")
core.own_file()
local scan = require("cuscan.scan")
local group = require("cuscan.group")

local raise, describe, format = core.raise, core.describe, string.format
local type, ipairs = type, ipairs
local M = core.methods

local shard = {}

-- The proxies of sharded tensors -> their state: { parts = {plain tensors held here}, first = shard
-- index of parts[1], sizes = every shard's size along dim, devices, dim (1-based), shape, dtype,
-- group }. Fields cannot be written from Lua: the proxy's metatable refuses it. The state is kept in
-- the proxy under a private key rather than in a weak-keyed table: LuaJIT has no ephemerons, so a
-- weak table would keep a dead proxy's shards (device memory) alive until the collection after.
local STATE = {}
local state = setmetatable({}, {
  __index = function(_, x) return type(x) == "table" and rawget(x, STATE) or nil end,
  __newindex = function(_, x, s) rawset(x, STATE, s) end,
})
local SM = {}       -- methods
local mt = {}

-- a copy of a list of the state, for the caller to keep
local function copy(list)
  local l = {}
  for i, v in ipairs(list) do l[i] = v end
  return l
end

local function is_sharded(v) return type(v) == "table" and state[v] ~= nil end
shard.is_sharded = is_sharded
core.is_sharded = is_sharded

local function check_sharded(v, fname, argname)
  local s = state[v]
  if type(v) ~= "table" or s == nil then
    raise(format("%s: %s: expected a sharded tensor, got %s", fname, argname, describe(v)))
  end
  return s
end

-- Sizes along a dim of n elements split in k parts, as numpy.array_split and torch.tensor_split:
-- the first n % k parts one larger; parts of size 0 when k > n.
function shard.sizes(n, k)
  local base, extra, sizes = math.floor(n / k), n % k, {}
  for i = 1, k do sizes[i] = base + (i <= extra and 1 or 0) end
  return sizes
end

-- A device name as a shard's: "cpu" (a CPU stand-in, repeatable) or a GPU, given as "cuda" (the
-- default GPU) or "cuda:N" and kept as "cuda:N".
local function check_device(v, fname, argname)
  local code = core.parse_device(v, fname, argname)
  if code == core.CPU then return "cpu" end
  return format("cuda:%d", core.gpu_index(code))
end

local function check_devices(devices, fname)
  if type(devices) ~= "table" or core.is_tensor(devices) or #devices == 0 then
    raise(format("%s: devices: expected a non-empty list of device names such as {\"cuda:0\", \"cuda:1\"}, got %s",
                 fname, describe(devices)))
  end
  local list = {}
  for i = 1, #devices do list[i] = check_device(devices[i], fname, format("devices[%d]", i)) end
  return list
end

-- A sharded tensor from its state (parts already on their devices).
local function new(s)
  local x = setmetatable({}, mt)
  state[x] = s
  return x
end

-- A sharded tensor like s (same sizes, devices, dim, group) over other parts.
local function like(s, parts)
  local h = core.check_tensor(parts[1], "shard", "x")
  return new({ parts = parts, first = s.first, sizes = s.sizes, devices = s.devices, dim = s.dim, shape = s.shape,
               dtype = core.DTYPE_NAME[core.dtype_of(h)], group = s.group })
end

-- A sharded tensor of the given shape split along d over the device list, shard k made by
-- make(its shape, its device, k, the elements along d before it).
local function split(shape, d, list, make)
  local sizes = shard.sizes(shape[d], #list)
  local parts, at = {}, 0
  for k, dev in ipairs(list) do
    local sub = {}
    for i = 1, #shape do sub[i] = shape[i] end
    sub[d] = sizes[k]
    parts[k] = make(sub, dev, k, at)
    at = at + sizes[k]
  end
  local full = {}
  for i = 1, #shape do full[i] = shape[i] end
  return new({ parts = parts, first = 1, sizes = sizes, devices = list, dim = d, shape = full,
               dtype = parts[1].dtype, group = group.local_group(list) })
end

-- The handle of the tensor x to split and the 1-based dim to split it along.
local function split_args(x, dim, fname)
  local xh = core.check_tensor(x, fname, "x")
  local nd = core.ndim_of(xh)
  if nd == 0 then raise(format("%s: x: a 0-d tensor has no dim to split (reshape it first)", fname)) end
  return xh, core.norm_dim(dim, nd, fname) + 1, nd
end

-- cs.shard(x, dim, devices): x split along dim over the devices (copies; x is left as it is).
function shard.shard(x, dim, devices)
  local xh, d = split_args(x, dim, "shard")
  local list = check_devices(devices, "shard")
  return split(core.shape_of(xh), d, list, function(sub, dev, _, at)
    local part = M.to(M.contiguous(M.narrow(x, d, at + 1, sub[d])), { device = dev })
    -- a part must never share x's storage (x:contiguous() of a slice on x's device may be x)
    if core.C.cs_tensor_overlap(core.check_tensor(part, "shard", "x"), xh) ~= 0 then part = M.clone(part) end
    return part
  end)
end

-- Creation on the shards directly (no full tensor first): make(shard's shape, device, k, offset)
-- gives shard k. Used by cs.zeros / ones / full / empty / rand / randn / arange with opts.devices.
function shard.create(shape, opts, fname, make)
  local list = check_devices(opts.devices, fname)
  local nd = core.parse_shape(shape, fname)
  if nd == 0 then raise(format("%s: shape: a sharded tensor needs at least one dim", fname)) end
  local d = core.norm_dim(opts.shard_dim == nil and 1 or opts.shard_dim, nd, fname, "shard_dim") + 1
  return split(shape, d, list, make)
end

-- cs.shard_local(t, dim[, dist]): in the multi-process mode, a sharded tensor whose shard of this
-- process is t (the shards of the ranks in rank order; sizes along dim may differ, other sizes not).
function shard.shard_local(t, dim, dist)
  local th, d, nd = split_args(t, dim, "shard_local")
  local g = group.process_group(dist, "shard_local")
  local shape = core.shape_of(th)
  local all = g:all_sizes(shape, d, t.device)
  local sizes, total = {}, 0
  for r = 1, #all do
    for i = 1, nd do
      if i ~= d and all[r][i] ~= shape[i] then
        raise(format("shard_local: x: rank %d holds a shard of shape %s, this rank (%d) one of %s; shards may " ..
                     "differ only along dim %d", r - 1, core.shape_str(all[r]), g.rank, core.shape_str(shape), d))
      end
    end
    sizes[r] = all[r][d]
    total = total + sizes[r]
  end
  shape[d] = total
  return new({ parts = { t }, first = g.rank + 1, sizes = sizes, devices = { t.device }, dim = d, shape = shape,
               dtype = t.dtype, group = g })
end

---------------------------------------------------------------------------------------------------
-- Queries
---------------------------------------------------------------------------------------------------
local FIELDS = {
  dtype = function(s) return s.dtype end,
  shard_dim = function(s) return s.dim end,
  ndim = function(s) return #s.shape end,
  devices = function(s) return copy(s.devices) end,
  rank = function(s) return s.group.rank end,
  world_size = function(s) return s.group.size end,
}

mt.__index = function(x, k)
  local m = SM[k]
  if m ~= nil then return m end
  local f = FIELDS[k]
  if f then return f(state[x]) end
  return nil
end
mt.__newindex = function(_, k)
  raise(format("sharded tensor: cannot set field %s (sharded tensors have no writable fields)", describe(k)))
end

function SM.shape(x) return copy(check_sharded(x, "shape", "x").shape) end
function SM.dim(x) return #check_sharded(x, "dim", "x").shape end
function SM.numel(x)
  local n = 1
  for _, v in ipairs(check_sharded(x, "numel", "x").shape) do n = n * v end
  return n
end
function SM.size(x, d)
  local s = check_sharded(x, "size", "x")
  if d == nil then return copy(s.shape) end
  return s.shape[core.norm_dim(d, #s.shape, "size") + 1]
end
-- x:shards(): the plain tensors this process holds, in shard order (every shard in one process).
function SM.shards(x) return copy(check_sharded(x, "shards", "x").parts) end
-- x:shard_sizes(): every shard's size along the sharded dim, in shard order.
function SM.shard_sizes(x) return copy(check_sharded(x, "shard_sizes", "x").sizes) end

-- x:gather([device]): the whole tensor as one plain tensor on device (default "cpu").
function SM.gather(x, device)
  local s = check_sharded(x, "gather", "x")
  local dev = device == nil and "cpu" or check_device(device, "gather", "device")
  -- joined on dev: parts on several GPUs meet there, not on the first part's GPU
  local whole = s.group:gather_parts(s.parts, s.dim, s.sizes, s.first, dev)
  return M.to(whole, { device = dev })
end

function SM.totable(x)
  check_sharded(x, "totable", "x")
  return M.totable(SM.gather(x, "cpu"))
end

local fmt = require("cuscan.format")
mt.__tostring = function(x)
  local s = state[x]
  local sizes = {}
  for i, v in ipairs(s.sizes) do sizes[i] = format("%.0f", v) end
  local where = s.group.size and format("ranks 0..%d (this is rank %d, on %s)", s.group.size - 1, s.group.rank,
                                        s.devices[1]) or table.concat(s.devices, ", ")
  local head = format("[cuscan %s tensor %s, sharded along dim %d over %s; shard sizes %s]", s.dtype,
                      core.shape_str(s.shape), s.dim, where, table.concat(sizes, ", "))
  -- one process of many shows its own shard: a gather would wait for every rank to print
  if s.group.size then
    return M.numel(s.parts[1]) > 1000 and head or (fmt.values(s.parts[1]) .. "\n" .. head .. " (this rank's shard shown)")
  end
  if SM.numel(x) > 1000 then return head end
  return fmt.values(SM.gather(x, "cpu")) .. "\n" .. head
end

---------------------------------------------------------------------------------------------------
-- Element-wise ops, shard by shard
---------------------------------------------------------------------------------------------------
local function same_sharding(a, b, fname)
  if a.dim ~= b.dim then
    raise(format("%s: b: sharded along dim %d, a along dim %d (shard both the same way)", fname, b.dim, a.dim))
  end
  local same = #a.sizes == #b.sizes and a.first == b.first and #a.parts == #b.parts
  for i = 1, same and #a.sizes or 0 do same = same and a.sizes[i] == b.sizes[i] end
  for i = 1, same and #a.parts or 0 do same = same and a.parts[i].device == b.parts[i].device end
  if not same then
    raise(format("%s: b: its shards (sizes %s on %s) do not match a's (sizes %s on %s); shard both the same way",
                 fname, table.concat(b.sizes, ", "), table.concat(b.devices, ", "), table.concat(a.sizes, ", "),
                 table.concat(a.devices, ", ")))
  end
end

-- a:op(b) shard by shard: b sharded as a, or a number or boolean.
local function binary(name)
  return function(a, b)
    local sa = check_sharded(a, name, "a")
    local sb = state[b]
    if sb then
      same_sharding(sa, sb, name)
    elseif type(b) ~= "number" and type(b) ~= "boolean" then
      raise(format("%s: b: expected a tensor sharded as a, or a number, got %s%s", name, describe(b),
                   core.is_tensor(b) and " (shard it the same way first)" or ""))
    end
    local parts = {}
    for i, p in ipairs(sa.parts) do parts[i] = M[name](p, sb and sb.parts[i] or b) end
    return like(sa, parts)
  end
end

for _, name in ipairs({ "add", "sub", "mul", "div", "pow", "lt", "le", "gt", "ge", "eq", "ne", "maximum",
                        "minimum", "logical_and", "logical_or" }) do
  SM[name] = binary(name)
end
for _, name in ipairs({ "exp", "log", "sqrt", "abs", "neg", "logical_not" }) do
  SM[name] = function(x)
    local s = check_sharded(x, name, "x")
    local parts = {}
    for i, p in ipairs(s.parts) do parts[i] = M[name](p) end
    return like(s, parts)
  end
end

-- x:to(dtype): every shard converted
function SM.to(x, dtype)
  local s = check_sharded(x, "to", "x")
  core.parse_dtype(dtype, "to")
  local parts = {}
  for i, p in ipairs(s.parts) do parts[i] = M.to(p, dtype) end
  return like(s, parts)
end

local function operator(name)
  return function(a, b)
    if state[a] or type(a) ~= "number" then return SM[name](a, b) end
    -- number first (2 - x): the plain tensors' operators take it so
    local s = state[b]
    local parts = {}
    for i, p in ipairs(s.parts) do parts[i] = core.tensor_mt["__" .. name](a, p) end
    return like(s, parts)
  end
end
mt.__add = operator("add")
mt.__sub = operator("sub")
mt.__mul = operator("mul")
mt.__div = operator("div")
mt.__unm = function(a) return SM.neg(a) end

---------------------------------------------------------------------------------------------------
-- Scans
---------------------------------------------------------------------------------------------------
require("cuscan.shard_scan")(shard, SM, state, check_sharded, like, same_sharding)

return shard

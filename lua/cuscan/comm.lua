-- cuscan.comm: NCCL communicators over the GPUs of one process or over processes (any hosts), and
-- the all-gather on them: the transport that tensors spread over GPUs stand on. NCCL is loaded when
-- first used; without it every call says "NCCL is not available" and why.
--
--   local comms = cs.comm_init_all({"cuda:0", "cuda:1"})    -- rank k on the k-th GPU named
--   cs.comm_group(function()
--     for k, c in ipairs(comms) do c:all_gather(recv[k], send[k]) end
--   end)
--   -- one process per GPU: rank 0 makes an id, every rank gets it (a file, MPI, ...), then
--   local c = cs.comm_init_rank(id, nranks, rank, "cuda:" .. local_rank)
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local check_tensor, is_int = core.check_tensor, core.is_int

local comm = {}
local ID_BYTES = 128  -- CS_COMM_ID_BYTES

local outp = ffi.new("cs_comm *[1]")

-- The communicators this module made (a forged `cs_comm *` is not one of them).
local live = setmetatable({}, { __mode = "k" })

local function check_comm(c, fname)
  if live[c] == nil then
    raise(format("%s: c: expected a communicator (from cs.comm_init_all or cs.comm_init_rank), got %s", fname,
                 describe(c)))
  end
  return c
end

local function adopt(ptr)
  local c = ffi.gc(ptr, C.cs_comm_release)
  live[c] = true
  return c
end

-- A GPU given as a name ("cuda", "cuda:N") or an index (0-based), checked for its form alone: its
-- name.
local function gpu_name(v, fname, argname)
  if type(v) == "number" then
    if not is_int(v) or v < 0 then
      raise(format("%s: %s: expected a GPU name or index (0, 1, ...), got %s", fname, argname, describe(v)))
    end
    return format("cuda:%d", v)
  end
  if type(v) ~= "string" or not (v == "cuda" or v:match("^cuda:%d+$")) then
    core.parse_device(v, fname, argname)  -- raises for what is not a device name
    raise(format("%s: %s: expected a GPU (\"cuda\" or \"cuda:N\"), got %s", fname, argname, describe(v)))
  end
  return v
end

-- The index of the GPU named (gpu_name's result); without CUDA there is no NCCL to use, which is
-- said first, as the calls without devices do.
local function gpu_index(name, fname, argname)
  if not core.cuda_ok then raise(format("%s: NCCL is not available: %s", fname, core.cuda_reason())) end
  return core.gpu_index(core.parse_device(name, fname, argname))
end

local methods = {}

-- c:rank(): this communicator's rank, from 0.
function methods.rank(c) return C.cs_comm_rank(check_comm(c, "rank")) end

-- c:size(): the number of ranks.
function methods.size(c) return C.cs_comm_size(check_comm(c, "size")) end

-- c:device(): the GPU of this rank, "cuda:N".
function methods.device(c) return format("cuda:%d", C.cs_comm_device(check_comm(c, "device"))) end

-- c:all_gather(recv, send): every rank's send (contiguous, on c's GPU) into recv (contiguous,
-- c:size() times send's elements, send's dtype, on c's GPU), in rank order; queued on the GPU.
-- Returns recv.
function methods.all_gather(c, recv, send)
  check_comm(c, "all_gather")
  local rh = check_tensor(recv, "all_gather", "recv")
  local sh = check_tensor(send, "all_gather", "send")
  if C.cs_all_gather(c, rh, sh) ~= 0 then core.fail("all_gather") end
  return recv
end

ffi.metatype("cs_comm", {
  __index = methods,
  __newindex = function(_, k)
    raise(format("comm: cannot set field %s (communicators have no writable fields)", describe(k)))
  end,
  __tostring = function(c)
    if live[c] == nil then return "[cuscan communicator (not one cuscan made)]" end
    return format("[cuscan communicator rank %d of %d, cuda:%d]", C.cs_comm_rank(c), C.cs_comm_size(c),
                  C.cs_comm_device(c))
  end,
})

-- cs.comm_unique_id(): a fresh id (a 128-byte string) that the ranks of one communicator share.
function comm.unique_id()
  local buf = ffi.new("unsigned char[?]", ID_BYTES)
  if C.cs_comm_unique_id(buf) ~= 0 then core.fail("comm_unique_id") end
  return ffi.string(buf, ID_BYTES)
end

-- cs.comm_init_all(devices): a list of communicators, one per GPU named (rank k on devices[k]).
function comm.init_all(devices)
  if type(devices) ~= "table" or #devices == 0 then
    raise(format("comm_init_all: devices: expected a list of GPUs ({\"cuda:0\", \"cuda:1\"}), got %s",
                 describe(devices)))
  end
  local n = #devices
  local names = {}
  local function twice(k, name)
    raise(format("comm_init_all: devices[%d]: %s is named twice (one communicator per GPU)", k, name))
  end
  local seen = {}
  for k = 1, n do
    names[k] = gpu_name(devices[k], "comm_init_all", format("devices[%d]", k))
    if seen[names[k]] then twice(k, names[k]) end
    seen[names[k]] = true
  end
  local idx = ffi.new("int[?]", n)
  seen = {}
  for k = 1, n do
    local i = gpu_index(names[k], "comm_init_all", format("devices[%d]", k))
    if seen[i] then twice(k, format("cuda:%d", i)) end  -- "cuda" and "cuda:N" naming one GPU
    seen[i] = true
    idx[k - 1] = i
  end
  local out = ffi.new("cs_comm *[?]", n)
  if C.cs_comm_init_all(out, n, idx) ~= 0 then core.fail("comm_init_all") end
  local list = {}
  for k = 1, n do list[k] = adopt(out[k - 1]) end
  return list
end

-- cs.comm_init_rank(id, nranks, rank, device): this process's communicator, rank `rank` (from 0) of
-- nranks processes sharing id (cs.comm_unique_id() of one of them), on the GPU named. Waits until
-- every rank has joined.
function comm.init_rank(id, nranks, rank, device)
  if type(id) ~= "string" or #id ~= ID_BYTES then
    raise(format("comm_init_rank: id: expected the %d-byte string of cs.comm_unique_id(), got %s", ID_BYTES,
                 type(id) == "string" and format("a string of %d bytes", #id) or describe(id)))
  end
  if not is_int(nranks) or nranks < 1 then
    raise(format("comm_init_rank: nranks: expected a whole number >= 1, got %s", describe(nranks)))
  end
  if not is_int(rank) or rank < 0 or rank >= nranks then
    raise(format("comm_init_rank: rank: expected a whole number from 0 to nranks - 1 (%d), got %s", nranks - 1,
                 describe(rank)))
  end
  local gpu = gpu_index(gpu_name(device, "comm_init_rank", "device"), "comm_init_rank", "device")
  local buf = ffi.new("unsigned char[?]", ID_BYTES)
  ffi.copy(buf, id, ID_BYTES)
  if C.cs_comm_init_rank(outp, buf, nranks, rank, gpu) ~= 0 then core.fail("comm_init_rank") end
  local c = adopt(outp[0])
  outp[0] = nil
  return c
end

-- cs.comm_group(fn): runs fn, whose collectives on several communicators of this process then go
-- out together (ncclGroupStart / ncclGroupEnd); returns what fn returns.
function comm.group(fn)
  if type(fn) ~= "function" then raise(format("comm_group: fn: expected a function, got %s", describe(fn))) end
  if C.cs_comm_group_start() ~= 0 then core.fail("comm_group") end
  local res = { pcall(fn) }
  local ended = C.cs_comm_group_end() == 0
  if not res[1] then error(res[2], 0) end
  if not ended then core.fail("comm_group") end
  return unpack(res, 2, table.maxn(res))
end

return comm

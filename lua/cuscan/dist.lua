-- cuscan.dist: the multi-process mode, one process per GPU as torchrun and mpirun run them.
-- cs.distributed() reads this process's place from the environment (bin/cuscan --nproc sets
-- CUSCAN_RANK, CUSCAN_WORLD_SIZE, CUSCAN_LOCAL_RANK; under mpirun, Open MPI's OMPI_COMM_WORLD_* or
-- the PMI_* of MPICH and Intel MPI), meets the other processes in the rendezvous directory
-- (CUSCAN_RENDEZVOUS, shared by every process, across hosts a shared file system) and gives
-- { rank, world_size, local_rank, device, comm }.
--
-- On GPUs the communicator is NCCL's: rank 0 writes the NCCL unique id to a file of the directory
-- (written whole to a temporary name, then renamed, so a reader never sees part of it), the others
-- poll for it (CUSCAN_RENDEZVOUS_TIMEOUT seconds, 120 by default). With CPU stand-ins (the device is
-- "cpu") the communicator exchanges through files of that directory instead: for tests and CPU runs
-- only, it is slow and leaves its files for whoever made the directory to remove.
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local raise, format = core.raise, string.format
local M = core.methods
local dist = {}

pcall(ffi.cdef, "int usleep(unsigned int usec);")

local function env_int(name, least, most)
  local v = os.getenv(name)
  if v == nil or v == "" then return nil end
  local n = tonumber(v)
  if n == nil or n ~= math.floor(n) or n < least or (most and n > most) then
    raise(format("distributed: %s: expected an integer in %d..%s, got %q", name, least, most and tostring(most) or "",
                 v))
  end
  return n
end

-- rank, world size and local rank from the first launcher whose variables are set, else nil
local LAUNCHERS = {
  { "CUSCAN_WORLD_SIZE", "CUSCAN_RANK", { "CUSCAN_LOCAL_RANK" } },
  { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", { "OMPI_COMM_WORLD_LOCAL_RANK" } },
  { "PMI_SIZE", "PMI_RANK", { "MPI_LOCALRANKID", "PMI_LOCAL_RANK" } },
}
local function place()
  for _, l in ipairs(LAUNCHERS) do
    local size = env_int(l[1], 1)
    if size then
      local rank = env_int(l[2], 0, size - 1)
      if rank == nil then raise(format("distributed: %s: not set beside %s", l[2], l[1])) end
      local loc
      for _, name in ipairs(l[3]) do loc = loc or env_int(name, 0) end
      return rank, size, loc or rank
    end
  end
end

-- waits for path to exist; gives its contents
local function wait_for(path, timeout, what)
  local waited, pause = 0, 1000
  while true do
    local f = io.open(path, "rb")
    if f then
      local s = f:read("*a")
      f:close()
      return s
    end
    if waited >= timeout * 1e6 then
      raise(format("distributed: rendezvous: %s (%s) did not appear within %g s; are all %s processes started, " ..
                   "with the same CUSCAN_RENDEZVOUS directory?", what, path, timeout, os.getenv("CUSCAN_WORLD_SIZE") or "the"))
    end
    ffi.C.usleep(pause)
    waited = waited + pause
    pause = math.min(pause * 2, 50000)
  end
end

local function write_atomic(path, bytes)
  local tmp = path .. ".tmp"
  local f, err = io.open(tmp, "wb")
  if not f then raise(format("distributed: rendezvous: cannot write %s: %s", tmp, err)) end
  f:write(bytes)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then raise(format("distributed: rendezvous: cannot rename %s: %s", tmp, rerr)) end
end
dist.write_atomic = write_atomic

---------------------------------------------------------------------------------------------------
-- The file communicator of CPU stand-ins: each all-gather writes this rank's part as an .npy file
-- and reads the others'.
---------------------------------------------------------------------------------------------------
local FileComm = {}
FileComm.__index = FileComm

function FileComm:rank() return self.my_rank end
function FileComm:size() return self.nranks end

function FileComm:all_gather(recv, send)
  local cs = require("cuscan")
  local n = M.numel(send)
  if n == 0 then return end
  self.seq = self.seq + 1
  local function path(r) return format("%s/gather-%s-%d-%d.npy", self.dir, self.run, self.seq, r) end
  local mine = path(self.my_rank)
  cs.save(mine .. ".tmp", M.reshape(M.contiguous(send), { n }), { format = "npy" })
  assert(os.rename(mine .. ".tmp", mine))
  for r = 0, self.nranks - 1 do
    local part = send
    if r ~= self.my_rank then
      wait_for(path(r), self.timeout, format("rank %d's part of all-gather %d", r, self.seq))
      part = cs.load(path(r), { device = "cpu" })
    end
    M.copy(M.narrow(recv, 1, r * n + 1, n), M.reshape(M.contiguous(part), { n }))
  end
end

---------------------------------------------------------------------------------------------------
-- cs.distributed()
---------------------------------------------------------------------------------------------------
local current

-- cs.distributed(): this process's { rank, world_size, local_rank, device, comm } in the
-- multi-process mode, made once (the rendezvous happens on the first call); nil when the process
-- was not started as one of many.
function dist.distributed()
  if current then return current end
  local rank, size, local_rank = place()
  if rank == nil then return nil end
  local cs = require("cuscan")
  local dir = os.getenv("CUSCAN_RENDEZVOUS")
  if dir == nil or dir == "" then
    raise("distributed: CUSCAN_RENDEZVOUS: not set; name a directory every process can read and write " ..
          "(bin/cuscan --nproc makes one)")
  end
  local timeout = tonumber(os.getenv("CUSCAN_RENDEZVOUS_TIMEOUT") or "120") or 120
  local run = (os.getenv("CUSCAN_RUN_ID") or "run"):gsub("[^%w_.-]", "_")
  local device = os.getenv("CUSCAN_DEVICE")
  if device == nil or device == "" then device = core.cuda_ok and format("cuda:%d", local_rank) or "cpu" end
  local comm
  if device == "cpu" then
    comm = setmetatable({ dir = dir, run = run, my_rank = rank, nranks = size, seq = 0, timeout = timeout }, FileComm)
  else
    if cs.comm_init_rank == nil then
      raise("distributed: this build of cuscan has no NCCL binding (cs.comm_init_rank); run with CUSCAN_DEVICE=cpu")
    end
    local path = format("%s/nccl-id-%s", dir, run)
    local id
    if rank == 0 then
      id = cs.comm_unique_id()
      write_atomic(path, id)
    else
      id = wait_for(path, timeout, "the NCCL id rank 0 writes")
    end
    comm = cs.comm_init_rank(id, size, rank, device)
  end
  current = { rank = rank, world_size = size, local_rank = local_rank, device = device, comm = comm,
              rendezvous = dir }
  return current
end

-- The current process group's table, or an error for fname when there is none.
function dist.current(fname)
  local d = dist.distributed()
  if d == nil then
    raise(format("%s: not in the multi-process mode (start the script with bin/cuscan --nproc N, or under mpirun)",
                 fname))
  end
  return d
end

return dist

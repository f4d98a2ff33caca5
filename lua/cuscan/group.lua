-- cuscan.group: how the shards of a sharded tensor exchange data. Two kinds, one interface:
--   * a local group: every shard in this process (cs.shard, creation with opts.devices). GPU shards
--     all-gather through NCCL (cs.comm_init_all, one communicator per GPU, calls grouped); CPU
--     stand-ins (and a list mixing CPU and GPU) exchange by plain copies.
--   * a process group: one shard per process (cuscan.dist): all-gathers go through the process's
--     communicator, NCCL on GPUs or, for CPU stand-ins, the file exchange of cuscan.dist.
-- g:all_gather(sends) takes one tensor per shard held here and gives back, for each, a tensor of
-- shape {number of shards, send's shape...} on that shard's device holding every shard's send in
-- shard order; g:gather_parts(parts, dim, sizes, first, device) joins the whole tensor on device.
local core = require("cuscan.core")
core.own_file()

local M = core.methods
local format = string.format
local group = {}

local function stacked(t)
  return M.unsqueeze(M.contiguous(t), 1)
end

-- one line per send, moved to device and stacked along a new first dim
local function stack_on(sends, device)
  local rows = {}
  for j, t in ipairs(sends) do rows[j] = stacked(M.to(t, { device = device })) end
  return require("cuscan.ops").cat(rows, 1)
end

---------------------------------------------------------------------------------------------------
-- One process, every shard
---------------------------------------------------------------------------------------------------
local Local = {}
Local.__index = Local

-- kept for the life of the process (as a process group is): a weak cache let the collector drop
-- them between scans, and every sharded scan paid for a new NCCL init
local comms_cache = {}

-- The NCCL communicators of a device list (made once per list), or nil where the list is not all
-- distinct GPUs (NCCL takes each GPU once) or NCCL is not there.
local function comms_of(devices)
  local seen = {}
  for _, d in ipairs(devices) do
    if not d:match("^cuda:%d+$") or seen[d] then return nil end
    seen[d] = true
  end
  local cs = require("cuscan")
  if cs.comm_init_all == nil then return nil end
  local key = table.concat(devices, ",")
  local comms = comms_cache[key]
  if comms == nil then
    comms = { list = cs.comm_init_all(devices) }
    comms_cache[key] = comms
  end
  return comms.list
end

function group.local_group(devices)
  return setmetatable({ devices = devices }, Local)
end

function Local:all_gather(sends)
  local comms = M.numel(sends[1]) > 0 and comms_of(self.devices)
  local recvs = {}
  if comms then
    local cs = require("cuscan")
    local n = #sends
    for k, t in ipairs(sends) do
      local shape = t:shape()
      table.insert(shape, 1, n)
      recvs[k] = { cs.empty(shape, { dtype = t.dtype, device = self.devices[k] }), M.contiguous(t) }
    end
    cs.comm_group(function()
      for k, c in ipairs(comms) do c:all_gather(recvs[k][1], recvs[k][2]) end
    end)
    for k = 1, n do recvs[k] = recvs[k][1] end
    return recvs
  end
  local all = stack_on(sends, "cpu")
  for k = 1, #sends do recvs[k] = M.to(all, { device = self.devices[k] }) end
  return recvs
end

function Local:gather_parts(parts, dim, _, _, device)
  local list, moved = {}, false
  for _, p in ipairs(parts) do
    if M.size(p, dim) > 0 or #list == 0 then
      local q = M.to(p, { device = device })
      list[#list + 1] = q
      moved = moved or q ~= p
    end
  end
  -- one shard: the copy to device is already a tensor of its own
  if #list == 1 then return moved and list[1] or M.clone(list[1]) end
  return require("cuscan.ops").cat(list, dim)
end

---------------------------------------------------------------------------------------------------
-- One shard per process
---------------------------------------------------------------------------------------------------
local Proc = {}
Proc.__index = Proc

-- The process group of cs.distributed()'s answer (dist, or the current one when nil).
function group.process_group(dist, fname)
  dist = dist or require("cuscan.dist").current(fname)
  if type(dist) ~= "table" or dist.comm == nil then
    core.raise(format("%s: dist: expected the table cs.distributed() gives, got %s", fname, core.describe(dist)))
  end
  return setmetatable({ rank = dist.rank, size = dist.world_size, comm = dist.comm, device = dist.device }, Proc)
end

function Proc:all_gather(sends)
  local cs = require("cuscan")
  local t = M.contiguous(sends[1])
  local shape = t:shape()
  table.insert(shape, 1, self.size)
  local recv = cs.empty(shape, { dtype = t.dtype, device = self.device })
  if M.numel(t) > 0 then self.comm:all_gather(M.reshape(recv, { -1 }), M.reshape(t, { -1 })) end
  return { recv }
end

-- The shape of every rank's shard, in rank order (as tables).
function Proc:all_sizes(shape, _, device)
  local cs = require("cuscan")
  local nd = #shape
  local mine = cs.tensor(#shape == 0 and { 0 } or shape, { dtype = "int64", device = device })
  local all = M.totable(M.to(self:all_gather({ mine })[1], { device = "cpu" }))
  for r = 1, #all do
    for i = 1, nd do all[r][i] = tonumber(all[r][i]) end
  end
  return all
end

-- Every rank's shard padded to the largest size along dim (NCCL's all-gather moves equal counts),
-- gathered, then cut back and joined.
function Proc:gather_parts(parts, dim, sizes, _, device)
  local cs = require("cuscan")
  local p = parts[1]
  local most = 0
  for _, v in ipairs(sizes) do if v > most then most = v end end
  local shape = p:shape()
  shape[dim] = most
  local padded = cs.zeros(shape, { dtype = p.dtype, device = self.device })
  if sizes[self.rank + 1] > 0 then M.copy(M.narrow(padded, dim, 1, sizes[self.rank + 1]), p) end
  local all = self:all_gather({ padded })[1]
  local list = {}
  for r = 1, self.size do
    if sizes[r] > 0 or (r == self.size and #list == 0) then
      list[#list + 1] = M.to(M.narrow(M.select(all, 1, r), dim, 1, sizes[r]), { device = device })
    end
  end
  if #list == 1 then return M.clone(list[1]) end
  return require("cuscan.ops").cat(list, dim)
end

return group

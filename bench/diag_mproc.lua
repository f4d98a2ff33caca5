-- bench/diag_mproc.lua - where the time of a scan along the sharded dim goes in the multi-process
-- mode, against the same steps in one process. Each rank (or, in one process, each GPU) times:
--   plain    x:cumsum(2), no exchange (do the processes slow each other down at all?)
--   totals   x:sum(1) of its shard (the float64 reduce of the totals pass)
--   gather   the all-gather of the totals through the communicator
--   carried  x:cumsum(1, {initial = carry}) (the carried scan)
--   sharded  the whole sharded scan, x:cumsum(1) of the sharded tensor
-- with host clocks around each call and the device synchronised after it (medians of --reps).
--   bin/cuscan --nproc 2 bench/diag_mproc.lua      (one process per GPU)
--   luajit bench/diag_mproc.lua --single           (both GPUs from one process)
local cs = require("cuscan")
local core = require("cuscan.core")
local timer = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./") .. "host_timer.lua")

-- the totals pass of a sharded scan: a float64 sum along dim 1 (as cuscan.shard_scan does it)
local function totals_of(t, out)
  core.call("diag", core.C.cs_reduce, core.check_tensor(out, "diag", "out"), core.check_tensor(t, "diag", "x"), 0,
            core.C.CS_REDUCE_SUM)
  return out
end

local reps, single = 9, false
for i = 1, #arg do
  if arg[i] == "--reps" then reps = tonumber(arg[i + 1]) end
  if arg[i] == "--single" then single = true end
end
local ROWS, COLS = 2 ^ 16, 2 ^ 15

local function time_ms(fn, devices, before) return timer.time_ms(fn, devices, reps, before) end

if single then
  local devices = { "cuda:0", "cuda:1" }
  local x = cs.rand({ ROWS, COLS }, { seed = 1, devices = devices, shard_dim = 1 })
  local parts = x:shards()
  local row = {}
  row.plain = time_ms(function() for _, p in ipairs(parts) do p:cumsum(2) end end, devices)
  local outs = { cs.empty({ COLS }, { dtype = "float64", device = "cuda:0" }),
                 cs.empty({ COLS }, { dtype = "float64", device = "cuda:1" }) }
  row.totals = time_ms(function() for i, p in ipairs(parts) do totals_of(p, outs[i]) end end, devices)
  local carry = parts[1]:sum(1):to("float64")
  row.carried = time_ms(function() parts[2]:cumsum(1, { initial = carry:to({ device = "cuda:1" }) }); parts[1]:cumsum(1) end,
                        devices)
  row.sharded = time_ms(function() return x:cumsum(1) end, devices)
  print(("single process, 2 GPUs: plain %.3f  totals %.3f  carried %.3f  sharded %.3f ms"):format(row.plain, row.totals,
        row.carried, row.sharded))
  os.exit(0)
end

local d = cs.distributed()
assert(d, "diag_mproc: start it with bin/cuscan --nproc 2")
local mine = cs.shard_sizes(ROWS, d.world_size)[d.rank + 1]
local part = cs.rand({ mine, COLS }, { seed = d.rank + 1, device = d.device })
local x = cs.shard_local(part, 1)
local dev = { d.device }
-- every rank at the same point before each timed call (a tiny all-gather)
local tiny = cs.ones({ 1 }, { device = d.device })
local tiny_all = cs.empty({ d.world_size }, { device = d.device })
local function barrier() d.comm:all_gather(tiny_all, tiny); cs.synchronize(d.device) end

local totals = cs.empty({ COLS }, { dtype = "float64", device = d.device })
local gathered = cs.empty({ d.world_size, COLS }, { dtype = "float64", device = d.device })
local carry = cs.zeros({ COLS }, { dtype = "float64", device = d.device })
local r = {}
r.plain = time_ms(function() part:cumsum(2) end, dev, barrier)
r.plain_alone = d.rank == 0 and time_ms(function() part:cumsum(2) end, dev) or 0
barrier()
r.totals = time_ms(function() totals_of(part, totals) end, dev, barrier)
r.gather = time_ms(function() d.comm:all_gather(gathered:reshape({ -1 }), totals) end, dev, barrier)
r.carried = time_ms(function() part:cumsum(1, { initial = carry }) end, dev, barrier)
r.sharded = time_ms(function() return x:cumsum(1) end, dev, barrier)
r.sharded_free = time_ms(function() return x:cumsum(1) end, dev)
print(("rank %d on %s: plain %.3f (rank 0 alone %.3f)  totals %.3f  gather %.3f  carried %.3f  " ..
       "sharded %.3f (no barrier %.3f) ms"):format(d.rank, d.device, r.plain, r.plain_alone, r.totals, r.gather,
                                                   r.carried, r.sharded, r.sharded_free))
if d.rank == 0 then os.execute("nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader") end

-- A tensor sharded along its first dim, made on the shards (never whole on one device), scanned
-- along that dim, with sampled lines checked against a float64 Lua loop on the CPU.
--
--   bin/cuscan examples/sharded_scan.lua [rows] [cols]            one process, every GPU (two CPU
--                                                                  stand-ins without two GPUs)
--   bin/cuscan --nproc 2 examples/sharded_scan.lua [rows] [cols]  one process per GPU
--
-- rows is the length of the scanned (sharded) dim, 100000 by default; cols the number of lines, 64.
local cs = require("cuscan")

local rows = tonumber(arg[1] or "100000")
local cols = tonumber(arg[2] or "64")
local SAMPLES = 8
local dist = cs.distributed()

-- x: rows x cols float32, uniform in [0, 1), sharded along dim 1
local x, where
if dist then
  local mine = cs.shard_sizes(rows, dist.world_size)[dist.rank + 1]
  x = cs.shard_local(cs.rand({ mine, cols }, { seed = 1000 + dist.rank, device = dist.device }), 1)
  where = ("%d processes"):format(dist.world_size)
else
  local devices = {}
  local n = cs.device_count and cs.device_count() or 0
  for i = 0, n - 1 do devices[#devices + 1] = "cuda:" .. i end
  if #devices < 2 then devices = { "cpu", "cpu" } end
  x = cs.rand({ rows, cols }, { devices = devices, shard_dim = 1, seed = 1000 })
  where = table.concat(devices, ", ")
end

local y = x:cumsum(1)

-- column j of a sharded tensor, whole on the CPU (every process takes part in the multi-process mode)
local function column(s, j)
  if dist then return cs.shard_local(s:shards()[1]:narrow(2, j, 1):contiguous(), 1):gather("cpu") end
  local parts = {}
  for _, p in ipairs(s:shards()) do
    if p:size(1) > 0 then parts[#parts + 1] = p:narrow(2, j, 1):cpu() end
  end
  return cs.cat(parts, 1)
end

local worst, ok = 0, true
for k = 1, SAMPLES do
  local j = 1 + math.floor((k - 1) * (cols - 1) / math.max(SAMPLES - 1, 1))
  local xs, ys = column(x, j):totable(), column(y, j):totable()
  local acc = 0
  for i = 1, rows do
    acc = acc + xs[i][1]
    -- float32 output: within a few float32 ulps of the float64 prefix
    local err = math.abs(ys[i][1] - acc) / math.max(math.abs(acc), 1e-30)
    if err > worst then worst = err end
    if err > 1e-6 then ok = false end
  end
end

if not dist or dist.rank == 0 then
  print(("%s sharded cumsum of %d x %d float32 along the sharded dim over %s: %d sampled lines against a " ..
         "float64 Lua loop, max relative error %.2e"):format(ok and "PASS" or "FAIL", rows, cols, where, SAMPLES, worst))
end
if not ok then os.exit(1) end

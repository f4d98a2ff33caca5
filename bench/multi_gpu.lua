-- bench/multi_gpu.lua - the multi-GPU rows of `make bench` (with two GPUs or more; one line
-- otherwise): a float32 tensor of 2^31 elements sharded along dim 1 over every GPU, scanned along
-- a dim that is not sharded and along the sharded dim, each against the same scan on one GPU of
-- the same machine in the same run; the multi-process mode (bin/cuscan --nproc N) against the
-- single-process one; and, where the GPUs hold it, a tensor larger than one GPU (input and output:
-- 2^35 float32 on two H200s, 2^34 on two H100s) made on the shards, scanned along the sharded dim
-- and checked on sampled lines.
-- Times are wall-clock medians of repeated runs after warm-up, every GPU synchronised after each
-- run (bench/bench.lua's method, with a host clock since the work spans devices).
--
--   luajit bench/multi_gpu.lua [--reps N] [--no-huge]
--   (bin/cuscan --nproc N bench/multi_gpu.lua --worker ...: one rank of the multi-process row)
local cs = require("cuscan")
local timer = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./") .. "host_timer.lua")
local now_ms = timer.now_ms

local opts = { reps = 10 }
for i = 1, #arg do
  if arg[i] == "--reps" then opts.reps = tonumber(arg[i + 1]) end
  if arg[i] == "--no-huge" then opts.no_huge = true end
  if arg[i] == "--worker" then opts.worker = true end
end

local count = cs.device_count and cs.device_count() or (cs.cuda_available() and 1 or 0)
local ROWS, COLS = 2 ^ 16, 2 ^ 15   -- 2^31 elements

local function time_ms(fn, devices) return timer.time_ms(fn, devices, opts.reps) end

-- One rank of the multi-process row: its shard of the 2^31 tensor, scanned along the sharded dim;
-- rank 0 prints the median.
if opts.worker then
  local d = cs.distributed()
  local mine = cs.shard_sizes(ROWS, d.world_size)[d.rank + 1]
  local x = cs.shard_local(cs.rand({ mine, COLS }, { seed = d.rank + 1, device = d.device }), 1)
  local ms = time_ms(function() return x:cumsum(1) end, { d.device })
  if d.rank == 0 then print(("worker-median-ms %.4f"):format(ms)) end
  os.exit(0)
end

if count < 2 then
  print(("multi-GPU: not run (%d CUDA device%s; the multi-GPU rows need 2)"):format(count, count == 1 and "" or "s"))
  os.exit(0)
end

local devices = {}
for i = 0, count - 1 do devices[i + 1] = "cuda:" .. i end
local BYTES = ROWS * COLS * 4 * 2   -- read once, written once

local function row(name, ms, base_ms, target)
  print(("  %-44s %9.3f ms %8.1f GB/s  %5.2fx one GPU  (target %s)"):format(name, ms, BYTES / ms / 1e6, base_ms / ms,
                                                                          target))
end

print(("multi-GPU: %d GPUs (%s), float32 %d x %d (2^31 elements) sharded along dim 1, medians of %d runs"):format(
  count, cs.device_info and cs.device_info() and cs.device_info().name or "?", ROWS, COLS, opts.reps))

local one = cs.rand({ ROWS, COLS }, { seed = 1, device = "cuda:0" })
local sharded = cs.rand({ ROWS, COLS }, { seed = 1, devices = devices, shard_dim = 1 })

local one_dim2 = time_ms(function() return one:cumsum(2) end, { "cuda:0" })
local one_dim1 = time_ms(function() return one:cumsum(1) end, { "cuda:0" })
local sh_dim2 = time_ms(function() return sharded:cumsum(2) end, devices)
local sh_dim1 = time_ms(function() return sharded:cumsum(1) end, devices)
row("one GPU, along dim 2", one_dim2, one_dim2, "-")
row("one GPU, along dim 1", one_dim1, one_dim1, "-")
row(("%d GPUs, along dim 2 (not sharded)"):format(count), sh_dim2, one_dim2, ">= 1.9x")
row(("%d GPUs, along dim 1 (sharded: totals + carried scan)"):format(count), sh_dim1, one_dim1,
    ("about %.2fx, the bound of 3 bytes moved for 2"):format(count * 2 / 3))
one, sharded = nil, nil
collectgarbage()
for _, d in ipairs(devices) do cs.memory_trim(d) end

-- the multi-process mode: the same scan along the sharded dim, one process per GPU
do
  local launcher = os.getenv("CUSCAN_LAUNCHER") or "bin/cuscan"
  local p = io.popen(("%s --nproc %d bench/multi_gpu.lua --worker --reps %d 2>&1"):format(launcher, count, opts.reps))
  local out = p:read("*a")
  p:close()
  local ms = tonumber(out:match("worker%-median%-ms ([%d.]+)"))
  if ms then
    row(("%d processes, along dim 1 (vs one process: %.2fx)"):format(count, sh_dim1 / ms), ms, one_dim1,
        "within 10% of one process")
  else
    print("  multi-process row: failed\n" .. out)
  end
end

-- larger than one GPU: the largest power of two of float32 elements whose input and output fit the
-- GPUs together (1 GiB to spare on each) while exceeding one GPU's memory (2^35 on two H200s, 2^34
-- on two H100s), made on the shards, scanned along the sharded dim, checked on sampled lines
if not opts.no_huge then
  local cols = 2 ^ 15
  local least_total, one_total = math.huge, 0
  for _, d in ipairs(devices) do
    local ok, m = pcall(cs.memory_info, d)
    least_total = math.min(least_total, ok and m.free or 0)
    one_total = math.max(one_total, ok and m.total or 0)
  end
  local log2 = 40
  while log2 > 31 and 2 ^ log2 * 4 * 2 / count + 2 ^ 30 > least_total do log2 = log2 - 1 end
  if 2 ^ log2 * 4 * 2 <= one_total then
    print(("  larger than one GPU: not run (the GPUs' free memory holds no float32 tensor whose input and output " ..
           "exceed one GPU's %.0f GiB)"):format(one_total / 2 ^ 30))
  else
    local rows = 2 ^ log2 / cols
    local x = cs.rand({ rows, cols }, { seed = 7, devices = devices, shard_dim = 1 })
    local t0 = now_ms()
    local y = x:cumsum(1)
    for _, d in ipairs(devices) do cs.synchronize(d) end
    local ms = now_ms() - t0
    local worst = 0
    for _, j in ipairs({ 1, 12345, cols }) do
      local xs, ys = {}, {}
      for i, p in ipairs(x:shards()) do xs[i] = p:narrow(2, j, 1):cpu() end
      for i, p in ipairs(y:shards()) do ys[i] = p:narrow(2, j, 1):cpu() end
      local xv, yv = cs.cat(xs, 1):to("float64"):totable(), cs.cat(ys, 1):totable()
      local acc = 0
      for i = 1, rows do
        acc = acc + xv[i][1]
        worst = math.max(worst, math.abs(yv[i][1] - acc) / math.max(acc, 1e-30))
      end
    end
    print(("  2^%d float32 (%d x %d, %.0f GiB in + out, one GPU holds %.0f GiB) over %d GPUs along the sharded dim: " ..
           "%.1f ms, %.1f GB/s; 3 sampled lines %s (max relative error %.1e)"):format(log2, rows, cols,
           2 ^ log2 * 8 / 2 ^ 30, one_total / 2 ^ 30, count, ms, rows * cols * 8 / ms / 1e6,
           worst <= 1e-6 and "PASS" or "FAIL", worst))
  end
end

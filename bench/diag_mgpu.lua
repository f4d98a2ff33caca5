-- bench/diag_mgpu.lua - where the time of a sharded scan goes on two GPUs: each GPU's stream time
-- (CUDA events on both GPUs around one call, after warm-up) for plain scans of a [2^15, 2^15]
-- float32 tensor on each GPU alone, on both back to back, and for the sharded scan of a [2^16, 2^15]
-- tensor split over the two along dim 1, all along dim 2 (no exchange between the GPUs).
--   luajit bench/diag_mgpu.lua          (needs two GPUs)
local cs = require("cuscan")
assert(cs.device_count() >= 2, "diag_mgpu: needs two GPUs")

local GPUS = { "cuda:0", "cuda:1" }
local function sync() for _, d in ipairs(GPUS) do cs.synchronize(d) end end

-- stream time on GPU 0 and GPU 1 of one call of fn, after 8 calls of warm-up
local function stream_ms(fn)
  for _ = 1, 8 do fn() end
  sync()
  local starts, ends = {}, {}
  for i, d in ipairs(GPUS) do starts[i], ends[i] = cs.event(d), cs.event(d) end
  for i = 1, 2 do starts[i]:record() end
  fn()
  for i = 1, 2 do ends[i]:record() end
  sync()
  return starts[1]:elapsed(ends[1]), starts[2]:elapsed(ends[2])
end

local a = cs.rand({ 2 ^ 15, 2 ^ 15 }, { device = "cuda:0" })
local b = cs.rand({ 2 ^ 15, 2 ^ 15 }, { device = "cuda:1" })
local oa, ob = a:clone(), b:clone()
print("gpu0 only out=", stream_ms(function() a:cumsum(2, { out = oa }) end))
print("gpu1 only out=", stream_ms(function() b:cumsum(2, { out = ob }) end))
print("gpu0 only fresh", stream_ms(function() a:cumsum(2) end))
print("gpu1 only fresh", stream_ms(function() b:cumsum(2) end))
print("both out=", stream_ms(function() a:cumsum(2, { out = oa }); b:cumsum(2, { out = ob }) end))
print("both fresh", stream_ms(function() a:cumsum(2); b:cumsum(2) end))
local s = cs.shard(cs.rand({ 2 ^ 16, 2 ^ 15 }, { device = "cuda:0" }), 1, GPUS)
print("sharded dim2", stream_ms(function() s:cumsum(2) end))

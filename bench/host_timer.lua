-- bench/host_timer.lua - wall-clock timing of work that spans devices (bench/multi_gpu.lua,
-- bench/diag_mproc.lua): a monotonic host clock around each call, every listed device synchronised
-- after it, the median of the timed runs after three of warm-up.
--   local timer = dofile(here .. "host_timer.lua")
--   timer.time_ms(fn, {"cuda:0", "cuda:1"}, reps[, before])   -- before(): run untimed ahead of each
local cs = require("cuscan")
local ffi = require("ffi")

pcall(ffi.cdef, "struct cs_bench_ts { long tv_sec; long tv_nsec; }; int clock_gettime(int, struct cs_bench_ts *);")
local ts = ffi.new("struct cs_bench_ts")
local timer = {}

function timer.now_ms()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e3 + tonumber(ts.tv_nsec) / 1e6
end

function timer.median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

function timer.time_ms(fn, devices, reps, before)
  local function sync() for _, d in ipairs(devices) do cs.synchronize(d) end end
  for _ = 1, 3 do fn() end
  sync()
  local t = {}
  for i = 1, reps do
    if before then
      before()
      sync()
    end
    local t0 = timer.now_ms()
    fn()
    sync()
    t[i] = timer.now_ms() - t0
  end
  return timer.median(t)
end

return timer

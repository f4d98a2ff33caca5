-- bench/event_timer.lua - device-event timing of one device's queue, shared by bench/bench.lua,
-- bench/grid.lua and bench/cells.lua: three untimed runs, then each timed run between two events;
-- the median in milliseconds.
--   local timer = dofile(here .. "event_timer.lua")
--   local time_ms = timer.on("cuda")     -- or "cpu"
--   time_ms(fn, reps)
local cs = require("cuscan")
local timer = {}

function timer.median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

function timer.on(device)
  local e0, e1 = cs.event(device), cs.event(device)
  return function(fn, reps)
    for _ = 1, 3 do fn() end
    local t = {}
    for i = 1, reps do
      e0:record()
      fn()
      e1:record()
      t[i] = e0:elapsed(e1)
    end
    return timer.median(t)
  end
end

return timer

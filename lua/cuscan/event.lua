-- cuscan.event: timing events. On CUDA an event marks a point in the library's stream, so the time
-- between two events is device time of the work queued between them; on the CPU an event reads a
-- monotonic clock.
--
--   local e0, e1 = cs.event(), cs.event()      -- on the default device (or cs.event("cpu"))
--   e0:record(); x:cumsum(2); e1:record()
--   print(e0:elapsed(e1))                      -- milliseconds; waits for e1 to complete
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format

local ev = {}

-- Builds with an older header have no events; then cs.event says so when called.
if not pcall(ffi.typeof, "cs_event *") then
  function ev.new()
    raise("event: this build of libcuscan has no timing events; rebuild with `make`")
  end
  return ev
end

local outp = ffi.new("cs_event *[1]")
local ms = ffi.new("double[1]")

-- The events this module made (a forged or copied `cs_event *` is not one of them); weak keys,
-- so that an event still goes with the first collection after its last use.
local live = setmetatable({}, { __mode = "k" })

local function check_event(e, fname, argname)
  if live[e] == nil then
    raise(format("%s: %s: expected an event (from cs.event()), got %s", fname, argname, describe(e)))
  end
  return e
end

local methods = {}

-- e:record(): marks now in the queued work; returns e.
function methods.record(e)
  if C.cs_event_record(check_event(e, "record", "e")) ~= 0 then core.fail("record") end
  return e
end

-- e:elapsed(later): milliseconds from e to later (both recorded); waits for later to complete.
function methods.elapsed(e, later)
  check_event(e, "elapsed", "e")
  check_event(later, "elapsed", "later")
  if C.cs_event_elapsed(e, later, ms) ~= 0 then core.fail("elapsed") end
  return ms[0]
end

ffi.metatype("cs_event", {
  __index = methods,
  __newindex = function(_, k)
    raise(format("event: cannot set field %s (events have no writable fields)", describe(k)))
  end,
  __tostring = function() return "[cuscan event]" end,
})

-- cs.event([device]): a new event on the device (the default device unless named).
function ev.new(device, default_dev)
  local dev = device == nil and default_dev or core.parse_device(device, "event")
  if core.on_device(dev, C.cs_event_create, outp, core.kind(dev)) ~= 0 then core.fail("event") end
  local e = ffi.gc(outp[0], C.cs_event_free)
  outp[0] = nil
  live[e] = true
  return e
end

return ev

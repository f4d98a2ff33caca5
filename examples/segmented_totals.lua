-- Per-session running totals of an event log, by segmented scans: no loop over sessions or users.
--
--   bin/cuscan examples/segmented_totals.lua [--events E] [--users U] [--seed s]
--
-- The log holds E purchase events of U users, one after another in time order per user, as flat
-- tensors: the user's id, the seconds since the user's previous event and the amount in cents
-- (int64, so every total below is exact). A session starts with a user's first event or after 30
-- idle minutes; that bool tensor is the reset of every scan below, which restarts there:
--   total    cents:cumsum(1, {reset = starts})        spent so far in the session
--   number   ones:cumsum(1, {reset = starts})         the event's number within its session
--   biggest  cents:cummax(1, {reset = starts})        the largest purchase so far in the session,
--                                                     and the event (its index in the log) it was
--   left     cents:cumsum(1, {segments = session,     still to be spent in the session, this event
--                          reverse = true})           included: a reverse scan given session ids
--   lifetime cents:cumsum(1, {segments = user})       the user's running lifetime spend
-- A reverse scan restarts where its reset is true reading from the end, so it needs the sessions'
-- last events marked instead of their first; the segments form (session ids) builds that reset
-- itself, the same segments whatever the direction. Everything is checked against a plain loop over
-- the log (read back in chunks).
local cs = require("cuscan")

local opts = { seed = 11 }
do
  local known = { events = true, users = true, seed = true }
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    if not known[key] or tonumber(arg[i + 1]) == nil then
      io.stderr:write("usage: segmented_totals.lua [--events E] [--users U] [--seed s]\n")
      os.exit(2)
    end
    opts[key] = tonumber(arg[i + 1])
    i = i + 2
  end
end
local device = cs.default_device()
local E = opts.events or (device == "cuda" and 2 ^ 22 or 2 ^ 20)
local U = math.max(1, math.min(opts.users or math.floor(E / 200), E))
local IDLE = 1800  -- seconds without an event that end a session

-- The log: a user's first event where new_user is true (the first event of the log too), gaps of
-- 10 minutes on average (exponential: one in twenty passes 30 minutes), amounts of 0.00 to 49.99.
local new_user = cs.rand({ E }, { seed = opts.seed }):lt(U / E)
new_user[1] = true
local user = new_user:cumsum(1)                                           -- user ids 1, 2, ... (int64)
local gap = ((1 - cs.rand({ E }, { seed = opts.seed + 1 })):log() * -600):to("int64")
local cents = (cs.rand({ E }, { seed = opts.seed + 2 }) * 5000):to("int64")
local starts = gap:gt(IDLE):logical_or(new_user)                          -- the reset: a session's first event
local ones = cs.ones({ E }, { dtype = "int64" })

local e0, e1 = cs.event(), cs.event()
e0:record()
local total = cents:cumsum(1, { reset = starts })
local number = ones:cumsum(1, { reset = starts })
local biggest, at = cents:cummax(1, { reset = starts })
local session = starts:cumsum(1)                                          -- session ids 1, 2, ...
local left = cents:cumsum(1, { segments = session, reverse = true })
local lifetime = cents:cumsum(1, { segments = user })
e1:record()
local ms = e0:elapsed(e1)
local S = session[E]

print(string.format("event log: %d events of %d users in %d sessions (%.1f events a session) on %s; scans %.3f ms",
                    E, user[E], S, E / S, device, ms))

-- The check: a plain loop over the log, in chunks, keeping each session's and user's running state;
-- the second pass checks what is left in each session against the session sums of the first.
local CHUNK = 65536
local function chunks(tensors, fn)
  for first = 1, E, CHUNK do
    local n = math.min(CHUNK, E - first + 1)
    local t = {}
    for k, x in pairs(tensors) do t[k] = x:narrow(1, first, n):totable() end
    for j = 1, n do fn(first + j - 1, j, t) end
  end
end

local ok = { total = true, number = true, biggest = true, left = true, lifetime = true }
local sums, shown = {}, {}
local s, sess_total, count, best, best_at, user_id, user_total = 0, 0, 0, 0, 0, 0, 0
chunks({ cents = cents, gap = gap, new_user = new_user, total = total, number = number, biggest = biggest, at = at,
         lifetime = lifetime }, function(i, j, t)
  local c = t.cents[j]
  if t.new_user[j] then user_id, user_total = user_id + 1, 0 end
  if t.new_user[j] or t.gap[j] > IDLE then
    s, sess_total, count, best, best_at = s + 1, 0, 0, -1, 0
  end
  sess_total, count, user_total = sess_total + c, count + 1, user_total + c
  if c >= best then best, best_at = c, i end                            -- ties: the later event
  sums[s] = sess_total
  if t.total[j] ~= sess_total then ok.total = false end
  if t.number[j] ~= count then ok.number = false end
  if t.biggest[j] ~= best or t.at[j] ~= best_at then ok.biggest = false end
  if t.lifetime[j] ~= user_total then ok.lifetime = false end
  if s <= 5 then shown[s] = { user = user_id, events = count, total = sess_total, best = best, best_at = best_at } end
end)
s, sess_total = 0, 0
chunks({ cents = cents, starts = starts, left = left }, function(_, j, t)
  if t.starts[j] then s, sess_total = s + 1, 0 end
  if t.left[j] ~= sums[s] - sess_total then ok.left = false end
  sess_total = sess_total + t.cents[j]
end)

print("  session   user  events     spent  largest purchase (event)")
for k, r in ipairs(shown) do
  print(string.format("  %7d  %5d  %6d  %8.2f  %8.2f (%d)", k, r.user, r.events, r.total / 100, r.best / 100, r.best_at))
end
local pass = ok.total and ok.number and ok.biggest and ok.left and ok.lifetime
local function word(v) return v and "ok" or "WRONG" end
print(string.format("check against a loop over the log: session totals %s, event numbers %s, largest purchases %s, " ..
                    "left to spend %s, lifetime totals %s: %s", word(ok.total), word(ok.number), word(ok.biggest),
                    word(ok.left), word(ok.lifetime), pass and "PASS" or "FAIL"))
os.exit(pass and 0 or 1)

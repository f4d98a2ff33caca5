-- Survival curves: a discrete-time hazard model for many subjects, events simulated from it, the
-- at-risk counts and the Kaplan-Meier estimate computed from the events, all with scans.
--
--   bin/cuscan examples/survival_curve.lua [--subjects N] [--steps T] [--seed s] [--out PATH]
--
-- Subject i has hazard h[i][t] at time step t: the probability of the event at t given none
-- before. Its survival curve is the cumulative product S[i][t] = prod_{s<=t} (1 - h[i][s]), one
-- cumprod along time for all subjects at once; the population's curve is their mean over
-- subjects. Events are drawn step by step (u < h at each step; the first such step is the event)
-- and subjects are censored at a random time (they leave the study without an event).
--
-- From the simulated data alone: the number at risk at t (still observed, no event yet) is the
-- number of subjects leaving at t or later, a reverse cumsum over time of the counts leaving at
-- each step (events plus censorings); the Kaplan-Meier estimate is the cumulative product of
-- (1 - events / at risk), a cumprod masked to the steps where anyone is at risk (elsewhere 0/0).
-- It should follow the model's population curve within sampling error.
--
-- Prints a small table, checks the scans against plain Lua loops, and writes PATH.png through
-- gnuplot when it is installed (the command in $GNUPLOT, default gnuplot), PATH.csv otherwise.
-- PATH defaults to survival_curve in the current directory.
local cs = require("cuscan")

local opts = { seed = 11, out = "survival_curve" }
do
  local known = { subjects = true, steps = true, seed = true, out = true }
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    if not known[key] or arg[i + 1] == nil then
      io.stderr:write("usage: survival_curve.lua [--subjects N] [--steps T] [--seed s] [--out PATH]\n")
      os.exit(2)
    end
    opts[key] = key == "out" and arg[i + 1] or tonumber(arg[i + 1])
    i = i + 2
  end
end
local device = cs.default_device()
local N = opts.subjects or (device == "cuda" and 1000000 or 20000)
local T = opts.steps or 120
local seed = opts.seed

-- The model: a baseline hazard rising over time, scaled by a per-subject risk in [0.5, 2).
local t_index = cs.arange(T, { dtype = "int32" }):reshape({ 1, T })
local base = (t_index:to("float32") / T):pow(2) * 0.03 + 0.002
local risk = cs.rand({ N, 1 }, { seed = seed }) * 1.5 + 0.5
local h = base * risk                                              -- {N, T}, in (0, 0.07)
local S = (1 - h):cumprod(2)                                       -- each subject's survival curve
local model = S:mean(1)                                            -- the population's curve, {T}

-- The data: events and censoring times.
local u = cs.rand({ N, T }, { seed = seed + 1 })
local hit = u:lt(h)                                                -- the event would happen at t
local half = math.floor(T / 2)
local censor = (cs.rand({ N, 1 }, { seed = seed + 2 }) * (T - half + 1)):to("int32") + (half - 1)
                                                                   -- last observed step (0-based), half-1 .. T-1

-- Counts per time step from events (first hits) and censorings, then the at-risk numbers and the
-- Kaplan-Meier curve.
local function kaplan_meier(hit_, censor_)
  local before = hit_:cumsum(2, { exclusive = true })              -- hits strictly before t
  local observed = t_index:le(censor_)
  local event = hit_:logical_and(before:eq(0)):logical_and(observed)
  local censored = t_index:eq(censor_):logical_and(hit_:cumsum(2):eq(0))
  local events = event:sum(1)                                      -- int64 {T}
  local leaving = events + censored:sum(1)
  local at_risk = leaving:reverse_cumsum(1)                        -- still in the study at t
  local factor = 1 - events / at_risk                              -- 0/0 where nobody is at risk
  local km = factor:cumprod(1, { mask = at_risk:gt(0) })           -- those steps contribute 1
  return km, at_risk, events, censored:sum(1)
end

local e0, e1 = cs.event(), cs.event()
e0:record()
local km, at_risk, events, censored = kaplan_meier(hit, censor)
e1:record()
local ms = e0:elapsed(e1)

print(string.format("survival: %d subjects x %d steps on %s; Kaplan-Meier from simulated events in %.3f ms", N, T,
                    device, ms))
local km_t, model_t, risk_t, ev_t, cens_t = km:totable(), model:totable(), at_risk:totable(), events:totable(),
                                            censored:totable()
print("     t   at risk   events  censored  Kaplan-Meier   model S(t)")
local step = math.max(1, math.floor(T / 8))
for t = step, T, step do
  print(string.format("  %4d  %8d  %7d  %8d  %12.4f  %11.4f", t, risk_t[t], ev_t[t], cens_t[t], km_t[t], model_t[t]))
end

-- Checks. (1) The survival curves: cumprod against a float64 loop on sampled subjects.
local curves_ok, worst = true, 0
for k = 0, 7 do
  local i = 1 + math.floor(k * (N - 1) / 7)
  local hs, got = h:select(1, i):totable(), S:select(1, i):totable()
  local acc = 1
  for t = 1, T do
    acc = acc * (1 - hs[t])
    local err = math.abs(got[t] - acc) / acc
    if not (err <= 1e-5) then curves_ok = false end
    if err > worst then worst = err end
  end
end

-- (2) At-risk counts, events and Kaplan-Meier: a plain loop over subjects, on all of them or on
-- the first 20000 (with the scans run again on that part).
local M = math.min(N, 20000)
local km_c, risk_c, ev_c = km, at_risk, events
if M < N then km_c, risk_c, ev_c = kaplan_meier(hit:narrow(1, 1, M), censor:narrow(1, 1, M)) end
local counts_ok = true
do
  local hits, cens = hit:narrow(1, 1, M):totable(), censor:narrow(1, 1, M):totable()
  local n_risk, n_event = {}, {}
  for t = 1, T do n_risk[t], n_event[t] = 0, 0 end
  for i = 1, M do
    local last = cens[i][1] + 1                                    -- 1-based last observed step
    local leave, had = last, false
    for t = 1, last do
      if hits[i][t] then leave, had = t, true break end
    end
    for t = 1, leave do n_risk[t] = n_risk[t] + 1 end
    if had then n_event[leave] = n_event[leave] + 1 end
  end
  local got_risk, got_ev, got_km = risk_c:totable(), ev_c:totable(), km_c:totable()
  local acc = 1
  for t = 1, T do
    if got_risk[t] ~= n_risk[t] or got_ev[t] ~= n_event[t] then counts_ok = false end
    if n_risk[t] > 0 then acc = acc * (1 - n_event[t] / n_risk[t]) end
    if math.abs(got_km[t] - acc) > 1e-5 then counts_ok = false end
  end
end

-- (3) The estimate follows the model within sampling error, where enough subjects are at risk (a
-- loose bound: four standard errors of a proportion at the smallest number at risk compared).
local dev, least = 0, N
local enough = math.max(50, N / 20)
for t = 1, T do
  if risk_t[t] >= enough then
    dev = math.max(dev, math.abs(km_t[t] - model_t[t]))
    least = math.min(least, risk_t[t])
  end
end
local bound = 4 * math.sqrt(0.25 / math.max(least, 1)) + 0.01
local follows = dev <= bound

local ok = curves_ok and counts_ok and follows
print(string.format("check: survival curves vs a float64 loop (8 subjects) max rel error %.1e %s; " ..
                    "at risk, events and Kaplan-Meier vs a loop over %d subjects %s; " ..
                    "Kaplan-Meier vs model max |diff| %.4f (bound %.4f) %s: %s",
                    worst, curves_ok and "ok" or "WRONG", M, counts_ok and "ok" or "WRONG", dev, bound,
                    follows and "ok" or "TOO FAR", ok and "PASS" or "FAIL"))

-- The plot (gnuplot) or the table (CSV).
local function write_csv(path)
  local f = assert(io.open(path, "w"))
  f:write("t,at_risk,events,censored,kaplan_meier,model\n")
  for t = 1, T do
    f:write(string.format("%d,%d,%d,%d,%.6f,%.6f\n", t, risk_t[t], ev_t[t], cens_t[t], km_t[t], model_t[t]))
  end
  f:close()
end

local gnuplot = os.getenv("GNUPLOT") or "gnuplot"
local function have(cmd)
  local r = os.execute("command -v " .. cmd .. " >/dev/null 2>&1")
  return r == 0 or r == true
end
local written
if have(gnuplot) then
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write("set terminal png size 900,560\n", string.format("set output '%s.png'\n", opts.out),
          string.format("set title 'Survival of %d subjects: Kaplan-Meier from simulated events vs the model'\n", N),
          "set xlabel 'time step'\nset ylabel 'survival probability'\nset yrange [0:1.02]\nset key bottom left\n",
          "plot '-' using 1:2 with steps lw 2 title 'Kaplan-Meier', '-' using 1:2 with lines lw 2 dt 2 ",
          "title 'model: mean of cumprod(1 - h)'\n")
  for t = 1, T do f:write(string.format("%d %.6f\n", t, km_t[t])) end
  f:write("e\n")
  for t = 1, T do f:write(string.format("%d %.6f\n", t, model_t[t])) end
  f:write("e\n")
  f:close()
  local r = os.execute(gnuplot .. " " .. script)
  os.remove(script)
  if r == 0 or r == true then written = opts.out .. ".png" end
end
if not written then
  written = opts.out .. ".csv"
  write_csv(written)
end
print("wrote " .. written)
os.exit(ok and 0 or 1)

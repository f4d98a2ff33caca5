-- The three seed problems of cuscan, verified and timed (this is what `make demo` runs):
--
--   1. cumprod          of a float32 N x N tensor along dim 2
--   2. reverse cumsum   of the same along dim 2
--   3. masked cumsum    of the same along dim 2 (a random bool mask; masked-out elements count 0)
--
-- N is 32768 on a CUDA device (a 4 GiB tensor) and 2048 on the CPU; `bin/cuscan examples/demo.lua N`
-- or CUSCAN_DEMO_N=N picks another size, CUSCAN_DEMO_RUNS the number of timed runs (default 5).
--
-- Each op writes into one preallocated output (out=), is run once to warm up and then timed
-- with events (device time on CUDA); the median is printed with the bandwidth it reaches, counting
-- every input byte read once and every output byte written once. Each result is then checked on
-- sampled rows against an independent reference: the same row computed here in plain Lua, in
-- double precision, from the input values read back with totable(). The script prints PASS or
-- FAIL per problem and exits with status 1 when any fails.
local cs = require("cuscan")

local device = cs.default_device()
local n = tonumber(arg and arg[1]) or tonumber(os.getenv("CUSCAN_DEMO_N")) or (device == "cuda" and 32768 or 2048)
local runs = tonumber(os.getenv("CUSCAN_DEMO_RUNS")) or 5
local sample_rows = 8

local function say(fmt, ...) io.write(string.format(fmt, ...), "\n") io.flush() end

local where = device
if device == "cuda" then
  local info = cs.device_info()
  where = string.format("cuda (%s)", info.name)
else
  local why = cs.cuda_unavailable_reason()
  where = "cpu" .. (why ~= "" and (" (no CUDA: " .. why .. ")") or "")
end
say("cuscan %s demo on %s: float32 %d x %d, scans along dim 2, median of %d runs after a warm-up",
    cs.version, where, n, n, runs)

-- Inputs. x is uniform in [0, 1); the cumprod input is 0.99 + 0.02 x, in [0.99, 1.01), so that
-- products along a row of any length stay well inside float32's range.
local x = cs.rand({ n, n }, { seed = 20240521 })
local p
do
  local t = x * 0.02
  p = t + 0.99
  t:free()
end
local mask
do
  local r = cs.rand({ n, n }, { seed = 777 })
  mask = r:lt(0.5)
  r:free()
end
local out = cs.zeros({ n, n })

-- The independent reference for one row, in double precision.
local function reference_row(kind, xs, ms)
  local len = #xs
  local ref = {}
  if kind == "cumprod" then
    local acc = 1
    for j = 1, len do acc = acc * xs[j]; ref[j] = acc end
  elseif kind == "reverse_cumsum" then
    local acc = 0
    for j = len, 1, -1 do acc = acc + xs[j]; ref[j] = acc end
  else
    local acc = 0
    for j = 1, len do
      if ms[j] then acc = acc + xs[j] end
      ref[j] = acc
    end
  end
  return ref
end

-- Rows to check: the first, the last and some in between (a fixed sequence, so runs repeat).
local rows = { 1, n }
do
  local s = 12345
  while #rows < math.min(sample_rows, n) do
    s = (s * 1103515245 + 12345) % 2147483648
    local r = 1 + s % n
    local dup = false
    for _, v in ipairs(rows) do if v == r then dup = true end end
    if not dup then rows[#rows + 1] = r end
  end
end

local function check(kind, input, m, tol)
  local worst = 0
  for _, i in ipairs(rows) do
    local xs = input:select(1, i):totable()
    local ms = m and m:select(1, i):totable()
    local got = out:select(1, i):totable()
    local ref = reference_row(kind, xs, ms)
    for j = 1, #ref do
      local e, a = ref[j], got[j]
      local err = math.abs(a - e) / math.max(math.abs(e), 1e-30)
      if a ~= a then err = math.huge end
      if err > worst then worst = err end
    end
  end
  return worst <= tol, worst
end

local problems = {
  { label = "cumprod", kind = "cumprod", input = p, tol = 1e-4, bytes = 2 * 4 * n * n,
    run = function() p:cumprod(2, { out = out }) end },
  { label = "reverse cumsum", kind = "reverse_cumsum", input = x, tol = 1e-5, bytes = 2 * 4 * n * n,
    run = function() x:cumsum(2, { reverse = true, out = out }) end },
  { label = "masked cumsum", kind = "masked_cumsum", input = x, mask = mask, tol = 1e-5, bytes = (2 * 4 + 1) * n * n,
    run = function() x:cumsum(2, { mask = mask, out = out }) end },
}

local e0, e1 = cs.event(), cs.event()
local failed = 0
for _, pr in ipairs(problems) do
  pr.run()                                   -- warm-up
  cs.synchronize()
  local times = {}
  for k = 1, runs do
    e0:record()
    pr.run()
    e1:record()
    times[k] = e0:elapsed(e1)
  end
  table.sort(times)
  local ms = runs % 2 == 1 and times[(runs + 1) / 2] or (times[runs / 2] + times[runs / 2 + 1]) / 2
  local ok, worst = check(pr.kind, pr.input, pr.mask, pr.tol)
  if not ok then failed = failed + 1 end
  say("%-15s %10.3f ms %9.1f GB/s   %s (%d sampled rows against a float64 Lua loop: max rel error %.2e, tolerance %.0e)",
      pr.label, ms, pr.bytes / (ms * 1e-3) / 1e9, ok and "PASS" or "FAIL", #rows, worst, pr.tol)
end

if failed == 0 then
  say("all 3 problems PASS")
else
  say("%d of 3 problems FAIL", failed)
end
io.flush()
os.exit(failed == 0 and 0 or 1)

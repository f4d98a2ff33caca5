-- Bandwidth of each scan against tensor size, next to a plain copy of the same bytes.
--
--   bin/cuscan examples/bench_sweep.lua [--min K] [--max K] [--dim 1|2] [--runs R] [--out PATH]
--
-- For element counts 2^K from 2^min to 2^max, a float32 tensor of about sqrt(2^K) x sqrt(2^K) is
-- scanned along dim 2 (contiguous lines; --dim 1 scans the columns instead) by cumsum, cumprod,
-- reverse cumsum and masked cumsum, each writing into one preallocated output. Each op runs once
-- to warm up and then R times, timed with events (device time on CUDA); the median gives GB/s,
-- counting each input byte read once (the mask at 1 byte an element) and each output byte written
-- once. "copy" is out:copy(x), the floor a scan can reach. Every op is first checked on two lines
-- of the smallest size against a float64 loop.
--
-- Progress goes to stderr, the table to stdout, and the plot to PATH.png through gnuplot when it
-- is installed (the command in $GNUPLOT, default gnuplot), else the numbers to PATH.csv. PATH
-- defaults to bench_sweep in the current directory.
local cs = require("cuscan")

local device = cs.default_device()
local opts = { min = 12, max = device == "cuda" and 28 or 22, dim = 2, runs = device == "cuda" and 10 or 5,
               out = "bench_sweep" }
do
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    if opts[key] == nil or arg[i + 1] == nil or (key ~= "out" and tonumber(arg[i + 1]) == nil) then
      io.stderr:write("usage: bench_sweep.lua [--min K] [--max K] [--dim 1|2] [--runs R] [--out PATH]\n")
      os.exit(2)
    end
    opts[key] = key == "out" and arg[i + 1] or tonumber(arg[i + 1])
    i = i + 2
  end
end
assert(opts.min >= 2 and opts.min <= opts.max, "--min must be at least 2 and at most --max")
assert(opts.dim == 1 or opts.dim == 2, "--dim must be 1 or 2")
local dim = opts.dim

local OPS = {
  { name = "copy", run = function(b) b.out:copy(b.x) end, extra = 0 },
  { name = "cumsum", run = function(b) b.x:cumsum(dim, { out = b.out }) end, extra = 0 },
  { name = "cumprod", run = function(b) b.p:cumprod(dim, { out = b.out }) end, extra = 0 },
  { name = "reverse_cumsum", run = function(b) b.x:cumsum(dim, { reverse = true, out = b.out }) end, extra = 0 },
  { name = "masked_cumsum", run = function(b) b.x:cumsum(dim, { mask = b.mask, out = b.out }) end, extra = 1 },
}

local function shape_for(k)
  local cols = 2 ^ math.ceil(k / 2)
  return { 2 ^ k / cols, cols }
end

local function inputs(k)
  local shape = shape_for(k)
  local x = cs.rand(shape, { seed = k })
  local r = cs.rand(shape, { seed = 1000 + k })
  local b = { x = x, p = x * 0.02 + 0.99, mask = r:lt(0.5), out = cs.zeros(shape), shape = shape }
  r:free()
  return b
end

local function release(b)
  for _, key in ipairs({ "x", "p", "mask", "out" }) do b[key]:free() end
end

-- A float64 loop over one line (line i along dim) of the input, for the check.
local function check(b, op, i)
  local function line(t) return (dim == 2 and t:select(1, i) or t:select(2, i)):totable() end
  local got = line(b.out)
  local xs = line(op.name == "cumprod" and b.p or b.x)
  local ms = op.name == "masked_cumsum" and line(b.mask)
  local n = #xs
  local acc = op.name == "cumprod" and 1 or 0
  local first, last, step = 1, n, 1
  if op.name == "reverse_cumsum" then first, last, step = n, 1, -1 end
  local worst = 0
  for j = first, last, step do
    if op.name == "cumprod" then acc = acc * xs[j]
    elseif op.name == "copy" then acc = xs[j]
    elseif not ms or ms[j] then acc = acc + xs[j] end
    local err = math.abs(got[j] - acc) / math.max(math.abs(acc), 1e-30)
    if not (err <= worst) then worst = err end
  end
  return worst <= 1e-4, worst
end

do
  local b = inputs(opts.min)
  for _, op in ipairs(OPS) do
    op.run(b)
    for _, i in ipairs({ 1, b.shape[3 - dim] }) do
      local ok, worst = check(b, op, i)
      if not ok then
        io.stderr:write(string.format("bench_sweep: %s gives wrong results (line %d: max rel error %.2e)\n", op.name, i, worst))
        os.exit(1)
      end
    end
  end
  release(b)
end

-- The sweep.
local total = (opts.max - opts.min + 1) * #OPS
local done = 0
local function progress(label)
  local width = 30
  local filled = math.floor(width * done / total + 0.5)
  io.stderr:write(string.format("\r[%s%s] %3d%% %d/%d %-28s", string.rep("#", filled), string.rep(".", width - filled),
                                math.floor(100 * done / total + 0.5), done, total, label))
  io.stderr:flush()
end

local e0, e1 = cs.event(), cs.event()
local results = {}
progress("")
for k = opts.min, opts.max do
  local b = inputs(k)
  local n = 2 ^ k
  local row = { k = k, elements = n, shape = b.shape, gbs = {}, ms = {} }
  for _, op in ipairs(OPS) do
    progress(string.format("%s 2^%d", op.name, k))
    op.run(b)
    cs.synchronize()
    local times = {}
    for r = 1, opts.runs do
      e0:record()
      op.run(b)
      e1:record()
      times[r] = e0:elapsed(e1)
    end
    table.sort(times)
    local R = opts.runs
    local ms = R % 2 == 1 and times[(R + 1) / 2] or (times[R / 2] + times[R / 2 + 1]) / 2
    row.ms[op.name] = ms
    row.gbs[op.name] = (8 + op.extra) * n / (ms * 1e-3) / 1e9
    done = done + 1
  end
  release(b)
  results[#results + 1] = row
end
progress("done")
io.stderr:write("\n")

print(string.format("GB/s of float32 scans along dim %d on %s (median of %d runs; bytes = input + mask + output)",
                    dim, device == "cuda" and ("cuda (" .. cs.device_info().name .. ")") or "cpu", opts.runs))
local header = { string.format("%10s  %-13s", "elements", "shape") }
for _, op in ipairs(OPS) do header[#header + 1] = string.format("%16s", op.name) end
print(table.concat(header))
for _, row in ipairs(results) do
  local line = { string.format("%10d  %-13s", row.elements, row.shape[1] .. "x" .. row.shape[2]) }
  for _, op in ipairs(OPS) do line[#line + 1] = string.format("%16.2f", row.gbs[op.name]) end
  print(table.concat(line))
end

-- The plot, or the CSV.
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
          string.format("set title 'cuscan float32 scans along dim %d on %s'\n", dim, device),
          "set logscale x 2\nset format x '2^{%L}'\nset xlabel 'elements'\nset ylabel 'GB/s'\nset key top left\n")
  local plots = {}
  for _, op in ipairs(OPS) do
    plots[#plots + 1] = string.format("'-' using 1:2 with linespoints lw 2 title '%s'", op.name:gsub("_", " "))
  end
  f:write("plot ", table.concat(plots, ", "), "\n")
  for _, op in ipairs(OPS) do
    for _, row in ipairs(results) do f:write(string.format("%d %.4f\n", row.elements, row.gbs[op.name])) end
    f:write("e\n")
  end
  f:close()
  local r = os.execute(gnuplot .. " " .. script)
  os.remove(script)
  if r == 0 or r == true then written = opts.out .. ".png" end
end
if not written then
  written = opts.out .. ".csv"
  local f = assert(io.open(written, "w"))
  local cols = { "elements", "rows", "cols" }
  for _, op in ipairs(OPS) do cols[#cols + 1] = op.name .. "_gbs" end
  for _, op in ipairs(OPS) do cols[#cols + 1] = op.name .. "_ms" end
  f:write(table.concat(cols, ","), "\n")
  for _, row in ipairs(results) do
    local v = { string.format("%d", row.elements), string.format("%d", row.shape[1]), string.format("%d", row.shape[2]) }
    for _, op in ipairs(OPS) do v[#v + 1] = string.format("%.4f", row.gbs[op.name]) end
    for _, op in ipairs(OPS) do v[#v + 1] = string.format("%.6f", row.ms[op.name]) end
    f:write(table.concat(v, ","), "\n")
  end
  f:close()
end
print("wrote " .. written)
os.exit(0)

-- bench/grid.lua - the shape grid (`make bench GRID=1`): a contiguous tensor {outer, L, inner} of
-- about 2^26 elements scanned along dim 2 (L), for L and inner from 1 to 2^26, powers of two and
-- not, float32 and float64 (--dtypes adds float16 and bfloat16), unmasked and masked. Each cell is the scan's share of the bandwidth of
-- a device-to-device copy of the same tensor measured in the same process just before and after it
-- (the fastest of those copies), counting each input byte read once, the mask at one byte an
-- element and each output byte written once; medians of --reps timed runs after warm-up, the faster
-- of two rounds. PyTorch eager (and torch.compile with --compile) run the same cells when python3
-- has torch, and the last table says where either beat cuscan.
--
--   luajit bench/grid.lua [--csv PATH] [--reps N] [--log2 N] [--dtypes float32,float64]
--                         [--masked no,yes] [--no-torch] [--compile] [--only L=8]
--                         [--op cumsum|cummax|logcumsumexp|segmented]
--                         [--random N [--seed S]] [--families]
-- --random draws N cells instead of the fixed grid: L and inner log-uniform (most of them not powers
-- of two) with L * inner <= 2^log2, dtype and mask from the lists, and prints them worst first.
-- --families also times each cell through every kernel family that can take it (cs.force_family), so
-- a slow cell shows whether another family would have done better.
-- --op scans with another operator: cummax counts its int64 indices written (8 bytes an element),
-- segmented (cumsum restarting where a reset tensor is true, one element in 1000) its reset bytes.
local cs = require("cuscan")

local opts = { reps = 15, log2 = 26, dtypes = "float32,float64", masked = "no,yes", op = "cumsum" }
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    local key = a:match("^%-%-([%w-]+)$")
    if key == "no-torch" or key == "compile" or key == "families" then
      opts[key] = true
    elseif key and arg[i + 1] then
      opts[key] = arg[i + 1]
      i = i + 1
    else
      error("grid: unknown argument " .. a)
    end
    i = i + 1
  end
  opts.reps, opts.log2 = tonumber(opts.reps), tonumber(opts.log2)
  opts.random, opts.seed = tonumber(opts.random), tonumber(opts.seed or 1)
end
-- per operator: the Lua method, the extra bytes an element besides x and out, PyTorch's row kind
local OPS = {
  cumsum = { fn = "cumsum", extra = 0, kind = "cumsum" },
  cummax = { fn = "cummax", extra = 8, kind = "cummax_indices", indices = true },
  logcumsumexp = { fn = "logcumsumexp", extra = 0, kind = "logcumsumexp" },
  segmented = { fn = "cumsum", extra = 1, kind = "segmented_cumsum", reset = true },
}
local OP = OPS[opts.op] or error("grid: unknown --op " .. tostring(opts.op))

local function list(s)
  local t = {}
  for w in s:gmatch("[^,]+") do t[#t + 1] = w end
  return t
end

local N = 2 ^ opts.log2
local LS = { 1, 2, 3, 8, 32, 128, 999, 1024, 8192, 65536, 2 ^ 20, 2 ^ 26 }
local INNERS = { 1, 2, 3, 4, 7, 8, 16, 64, 512, 4096, 65536, 2 ^ 20 }
local BYTES = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2 }
local SHORT = { float32 = "f32", float64 = "f64", float16 = "f16", bfloat16 = "bf16" }

local timer = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./") .. "event_timer.lua")
local time_on_device = timer.on("cuda")
local function time_ms(fn) return time_on_device(fn, opts.reps) end

local function label(v)
  if v >= 1024 and v % 1024 == 0 then
    local k = math.log(v) / math.log(2)
    if k == math.floor(k) then return "2^" .. k end
  end
  return tostring(v)
end

-- the cells
local cells = {}
local function add_cell(dtype, masked, L, inner)
  local c = { dtype = dtype, masked = masked, L = L, inner = inner, outer = math.floor(N / (L * inner)) }
  c.name = ("%s%s L=%s inner=%s"):format(SHORT[dtype], c.masked and " masked" or "", label(L), label(inner))
  if opts.random then c.name = c.name .. " outer=" .. c.outer end
  if not opts.only or c.name:find(opts.only, 1, true) then cells[#cells + 1] = c end
end
if opts.random then
  math.randomseed(opts.seed)
  local dtypes, maskeds = list(opts.dtypes), list(opts.masked)
  -- log-uniform in [1, 2^k]: a power of two for one draw in eight, else any integer
  local function draw(k)
    local v = math.floor(2 ^ (math.random() * k) + 0.5)
    if math.random(8) == 1 then v = 2 ^ math.floor(math.log(v) / math.log(2) + 0.5) end
    return math.max(1, v)
  end
  for _ = 1, opts.random do
    local L = draw(opts.log2)
    local inner = math.min(draw(math.max(0, opts.log2 - math.log(L) / math.log(2))), math.floor(N / L))
    add_cell(dtypes[math.random(#dtypes)], maskeds[math.random(#maskeds)] == "yes", L, inner)
  end
end
for _, dtype in ipairs(opts.random and {} or list(opts.dtypes)) do
  for _, m in ipairs(list(opts.masked)) do
    for _, L in ipairs(LS) do
      for _, inner in ipairs(INNERS) do
        if L * inner <= N then add_cell(dtype, m == "yes", L, inner) end
      end
    end
  end
end

local info = cs.device_info()
local date = os.date("!%Y-%m-%d")
local csv = opts.csv and assert(io.open(opts.csv, "w"))
if csv then
  csv:write("device,date,dtype,masked,outer,L,inner,plan,ms,copy_ms,copy_gbs,gbs,frac_copy,torch_eager_ms,torch_compile_ms\n")
end
local function csv_row(c, p)
  p = p or {}
  csv:write(("%s,%s,%s,%s,%d,%d,%d,%s,%.5f,%.5f,%.1f,%.1f,%.4f,%s,%s\n"):format(info.name, date, c.dtype,
    tostring(c.masked), c.outer, c.L, c.inner, c.plan, c.ms, c.copy_ms, c.copy_gbs, c.gbs, c.frac,
    p.eager or "", p.compiled or ""))
  csv:flush()
end
io.stderr:write(("grid: %d cells on %s\n"):format(#cells, info.name))
for i, c in ipairs(cells) do
  local shape = { c.outer, c.L, c.inner }
  local x = cs.rand(shape, { dtype = c.dtype, seed = i })
  local y = cs.rand(shape, { dtype = c.dtype, seed = i + 1 })
  local m = c.masked and cs.rand(shape, { seed = i + 2 }):lt(0.5) or nil
  local function copy() return time_ms(function() y:copy(x) end) end
  local copy_ms = math.min(copy(), copy())
  local r = OP.reset and cs.rand(shape, { seed = i + 3 }):lt(0.001) or nil
  local o = { out = OP.indices and { y, cs.empty(shape, { dtype = "int64" }) } or y, mask = m, reset = r }
  local scan = function() x[OP.fn](x, 2, o) end
  c.ms = math.min(time_ms(scan), time_ms(scan))
  copy_ms = math.min(copy_ms, copy())
  local n = c.outer * c.L * c.inner
  c.n = n
  c.copy_ms = copy_ms
  c.copy_gbs = 2 * n * BYTES[c.dtype] / copy_ms / 1e6
  c.gbs = (2 * n * BYTES[c.dtype] + (c.masked and n or 0) + OP.extra * n) / c.ms / 1e6
  c.frac = c.gbs / c.copy_gbs
  c.plan = cs.explain(x, 2, { op = OP.fn, mask = m, reset = r }):match("^cuda (%S+):") or "?"
  if opts.families then
    local forced = {}
    for _, fam in ipairs({ "rows", "columns", "columns/walk", "slabs", "slabs/lookback" }) do
      cs.force_family(fam)
      local plan = cs.explain(x, 2, { op = OP.fn, mask = m, reset = r }):match("^cuda (%S+):") or "?"
      local fam_only = fam:match("^[^/]+")
      if plan:match("^" .. fam_only) and plan ~= c.plan and not forced[plan] then
        local fms = math.min(time_ms(scan), time_ms(scan))
        forced[plan] = c.ms * c.frac / fms
        forced[#forced + 1] = ("%s %.0f%%"):format(plan, 100 * forced[plan])
      end
    end
    cs.force_family(nil)
    c.forced = table.concat(forced, ", ")
  end
  x, y, m, r, o = nil, nil, nil, nil, nil
  collectgarbage()
  if csv and opts["no-torch"] then csv_row(c) end
  if i % 20 == 0 then io.stderr:write(("grid: %d of %d\n"):format(i, #cells)) end
end

-- PyTorch on the same cells (times in ms), when it is there
local peers = {}
if not opts["no-torch"] then
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  for _, c in ipairs(cells) do
    f:write(("%s,%dx%dx%d,2,%s,%s\n"):format(c.name, c.outer, c.L, c.inner, c.dtype, OP.kind == "cumsum" and c.masked and "masked_cumsum" or OP.kind))
  end
  f:close()
  local p = io.popen(("python3 %scompare_torch.py %s --reps %d %s 2>/dev/null"):format(here, path, opts.reps,
                                                                                       opts.compile and "--compile" or ""))
  for line in p:lines() do
    local name, _, eager, compiled = line:match("^([^,]+),([^,]+),([^,]*),([^,]*),")
    if name then peers[name] = { eager = tonumber(eager), compiled = tonumber(compiled) } end
  end
  p:close()
  os.remove(path)
end

-- the tables: one per dtype and mask, rows L, columns inner
local function grid_table(title, value)
  for _, dtype in ipairs(list(opts.dtypes)) do
    for _, m in ipairs(list(opts.masked)) do
      local masked = m == "yes"
      print(("\n%s, %s%s (%% of copy; L down, inner across)"):format(title, dtype, masked and ", masked" or ""))
      local head = { ("%8s"):format("L\\inner") }
      for _, inner in ipairs(INNERS) do head[#head + 1] = ("%6s"):format(label(inner)) end
      print(table.concat(head, " "))
      for _, L in ipairs(LS) do
        local row = { ("%8s"):format(label(L)) }
        local any = false
        for _, inner in ipairs(INNERS) do
          local cell
          for _, c in ipairs(cells) do
            if c.dtype == dtype and c.masked == masked and c.L == L and c.inner == inner then cell = c end
          end
          local v = cell and value(cell)
          row[#row + 1] = ("%6s"):format(v and ("%.0f"):format(100 * v) or "-")
          any = any or v ~= nil
        end
        if any then print(table.concat(row, " ")) end
      end
    end
  end
end

print(("cuscan %s %s on %s, %s: {outer, L, inner} of up to %s elements, %s along L"):format(cs.version,
      opts.random and "random shape cells" or "shape grid", info.name, date, label(N), opts.op))
if opts.random then
  local sorted = {}
  for i, c in ipairs(cells) do sorted[i] = c end
  table.sort(sorted, function(a, b) return a.frac < b.frac end)
  print(("\n%d random cells (seed %d), worst first: %% of copy, plan%s"):format(#cells, opts.seed,
        opts.families and ", other families" or ""))
  for _, c in ipairs(sorted) do
    local p = peers[c.name]
    local best = p and math.min(p.eager or math.huge, p.compiled or math.huge)
    print(("  %-44s %5.1f%%  %-16s%s%s"):format(c.name, 100 * c.frac, c.plan,
          best and best < math.huge and ("  PyTorch %.0f%%"):format(100 * c.ms * c.frac / best) or "",
          c.forced and c.forced ~= "" and ("  [" .. c.forced .. "]") or ""))
  end
else
  grid_table("cuscan", function(c) return c.frac end)
end
if next(peers) and not opts.random then
  grid_table("PyTorch eager", function(c)
    local p = peers[c.name]
    return p and p.eager and c.ms * c.frac / p.eager
  end)
  if opts.compile then
    grid_table("torch.compile", function(c)
      local p = peers[c.name]
      return p and p.compiled and c.ms * c.frac / p.compiled
    end)
  end
end

-- summary
local met90, below85, slower, worst = 0, 0, {}, nil
for _, c in ipairs(cells) do
  if c.frac >= 0.90 then met90 = met90 + 1 end
  if c.frac < 0.85 then below85 = below85 + 1 end
  if not worst or c.frac < worst.frac then worst = c end
  local p = peers[c.name]
  local best = p and math.min(p.eager or math.huge, p.compiled or math.huge)
  if best and best < c.ms then slower[#slower + 1] = ("%s (%.4f ms, PyTorch %.4f ms)"):format(c.name, c.ms, best) end
end
print(("\n%d of %d cells at >= 90%% of copy, %d below 85%%; the lowest: %s %.1f%% (%s)"):format(met90, #cells, below85,
      worst.name, 100 * worst.frac, worst.plan))
if opts["no-torch"] then
  print("PyTorch not run (--no-torch)")
else
  print(("%d cells where PyTorch was faster%s"):format(#slower, #slower > 0 and ":" or ""))
  for _, s in ipairs(slower) do print("  " .. s) end
end

if csv then
  if not opts["no-torch"] then
    for _, c in ipairs(cells) do csv_row(c, peers[c.name]) end
  end
  csv:close()
end

-- bench/bench.lua - the performance table (`make bench`): every row of the speed targets, timed
-- with device events (median of repeated runs after warm-up), as GB/s and as a fraction of a
-- device-to-device copy of the same tensor measured in the same run (on the CPU: a memcpy on every
-- core); PyTorch eager and torch.compile side by side on CUDA when python3 with torch is present,
-- NumPy on the CPU when python3 with numpy is (bench/compare_numpy.py). On the CPU, element-wise
-- ops get a table of their own, against the same floor.
-- Each op's floor counts the bytes it must move once: the input read and the output written, a
-- mask or reset at one byte an element, and for cummax the int64 indices written besides the
-- values. The rows of cummax, logcumsumexp and the segmented cumsum (a reset every 1000 elements
-- or so) aim at 90% of their floor.
--
--   luajit bench/bench.lua [--csv PATH] [--only PATTERN] [--reps N] [--no-torch] [--no-numpy]
--                          [--compile] [--device cpu|cuda] [--ops cumsum,cummax_indices,...]
local cs = require("cuscan")

local opts = { reps = 20 }
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--families" then opts.families = true
    elseif a == "--csv" or a == "--only" or a == "--reps" or a == "--device" or a == "--ops" then
      opts[a:sub(3)] = arg[i + 1]
      i = i + 1
    elseif a == "--no-torch" then opts.no_torch = true
    elseif a == "--no-numpy" then opts.no_numpy = true
    elseif a == "--compile" then opts.compile = true
    else error("bench: unknown argument " .. a) end
    i = i + 1
  end
  opts.reps = tonumber(opts.reps)
end

local device = opts.device or cs.default_device()
cs.set_default_device(device)
local on_cuda = device == "cuda"

local OPS = {
  { "cumsum", {} },
  { "cumprod", {}, prod = true },
  { "reverse_cumsum", { reverse = true } },
  { "masked_cumsum", {}, masked = true },
  { "exclusive_cumsum", { exclusive = true } },
  { "reverse_exclusive_cumsum", { reverse = true, exclusive = true } },
  { "cummax_indices", {}, fn = "cummax", indices = true, target = 0.90 },
  { "logcumsumexp", {}, fn = "logcumsumexp", target = 0.90 },
  { "segmented_cumsum", {}, reset = true, target = 0.90 },
}

-- case name, shape, dim, dtype, target (fraction of copy bandwidth, or microseconds for "us")
local ROWS
if on_cuda then
  ROWS = {
    { "f32 32768x32768 dim2", { 32768, 32768 }, 2, "float32", 0.95 },
    { "f32 32768x32768 dim1", { 32768, 32768 }, 1, "float32", 0.90 },
    { "f64 16384x32768 dim2", { 16384, 32768 }, 2, "float64", 0.95 },
    { "f64 16384x32768 dim1", { 16384, 32768 }, 1, "float64", 0.90 },
    { "f32 1x2^28 dim2", { 1, 2 ^ 28 }, 2, "float32", 0.90 },
    { "f32 64x4096x256 dim2", { 64, 4096, 256 }, 2, "float32", 0.90 },
    { "f32 2^22x16 dim2", { 2 ^ 22, 16 }, 2, "float32", 0.85 },
    { "f32 16x2^22 dim1", { 16, 2 ^ 22 }, 1, "float32", 0.85 },
    { "f32 128x4000 dim2", { 128, 4000 }, 2, "float32", 8, us = true },
    -- 2-byte floats: read and written at 2 bytes an element, accumulated in float64
    { "f16 32768x32768 dim2", { 32768, 32768 }, 2, "float16", 0.95 },
    { "f16 32768x32768 dim1", { 32768, 32768 }, 1, "float16", 0.90 },
    { "bf16 32768x32768 dim2", { 32768, 32768 }, 2, "bfloat16", 0.95 },
    { "bf16 32768x32768 dim1", { 32768, 32768 }, 1, "bfloat16", 0.90 },
  }
else
  -- every layout at >= 70% of a memcpy on every core: rows, columns, one long line (split across
  -- the cores), short rows, few long columns
  ROWS = {
    { "cpu f32 4096x4096 dim2", { 4096, 4096 }, 2, "float32", 0.70 },
    { "cpu f32 4096x4096 dim1", { 4096, 4096 }, 1, "float32", 0.70 },
    { "cpu f64 2048x4096 dim2", { 2048, 4096 }, 2, "float64", 0.70 },
    { "cpu f64 2048x4096 dim1", { 2048, 4096 }, 1, "float64", 0.70 },
    { "cpu f32 1x2^24 dim2", { 1, 2 ^ 24 }, 2, "float32", 0.70 },
    { "cpu f32 2^20x16 dim2", { 2 ^ 20, 16 }, 2, "float32", 0.70 },
    { "cpu f32 16x2^20 dim1", { 16, 2 ^ 20 }, 1, "float32", 0.70 },
    { "cpu f32 2^20x16 dim1", { 2 ^ 20, 16 }, 1, "float32", 0.70 },
    { "cpu f16 4096x4096 dim2", { 4096, 4096 }, 2, "float16", 0.70 },
    { "cpu bf16 4096x4096 dim1", { 4096, 4096 }, 1, "bfloat16", 0.70 },
  }
end

local timer = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./") .. "event_timer.lua")
local median, time_ms = timer.median, timer.on(device)

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local BYTES = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2 }

-- run the rows
local results, skipped = {}, {}
local info = on_cuda and cs.device_info() or nil
local date = os.date("!%Y-%m-%d")
print(string.format("cuscan %s bench on %s, %s", cs.version, info and info.name or "CPU", date))

for _, row in ipairs(ROWS) do
  local name, shape, dim, dtype = row[1], row[2], row[3], row[4]
  if not opts.only or name:find(opts.only, 1, true) then
    local x = cs.rand(shape, { dtype = dtype, seed = 1 })
    local y = cs.rand(shape, { dtype = dtype, seed = 2 })  -- poisoned output: overwritten by every op
    local mask = cs.rand(shape, { seed = 3 }):lt(0.5)
    local reset = cs.rand(shape, { seed = 4 }):lt(0.001)
    local indices = cs.empty(shape, { dtype = "int64" })
    local n = numel(shape)
    -- the copy floor: the fastest of copies timed before and after the ops, so that a slow spell
    -- of the device during one copy timing cannot flatter the ratios
    local function copy_time() return time_ms(function() y:copy(x) end, opts.reps) end
    local copy_ms = math.min(copy_time(), copy_time())
    local case_rows = {}
    for _, op in ipairs(OPS) do
      if opts.ops and not ("," .. opts.ops .. ","):find("," .. op[1] .. ",", 1, true) then goto next_op end
      local o = {}
      for k, v in pairs(op[2]) do o[k] = v end
      o.out = op.indices and { y, indices } or y
      if op.masked then o.mask = mask end
      if op.reset then o.reset = reset end
      local scan = cs[op.fn or (op.prod and "cumprod" or "cumsum")]
      local fn = function() scan(x, dim, o) end
      -- a build whose device lacks the op says so, and the row is left out (listed after the table)
      local runs, why = pcall(fn)
      if not runs then
        skipped[#skipped + 1] = ("%s %s: %s"):format(name, op[1], tostring(why):match("cuscan: .*") or tostring(why))
      else
        local ms1 = time_ms(fn, opts.reps)
        local ms2 = time_ms(fn, opts.reps)
        local ms = math.min(ms1, ms2)
        local bytes = n * BYTES[dtype] * 2 + ((op.masked or op.reset) and n or 0) + (op.indices and 8 * n or 0)
        case_rows[#case_rows + 1] = { case = name, op = op[1], ms = ms, ms1 = ms1, ms2 = ms2, gbs = bytes / ms / 1e6,
                                      target = (op.target and row[5] and not row.us) and op.target or row[5],
                                      us = row.us, shape = shape, dim = dim, dtype = dtype }
      end
      ::next_op::
    end
    copy_ms = math.min(copy_ms, copy_time())
    local copy_gbs = 2 * n * BYTES[dtype] / copy_ms / 1e6
    for _, r in ipairs(case_rows) do
      r.copy_ms, r.copy_gbs, r.frac = copy_ms, copy_gbs, r.gbs / copy_gbs
      if r.target then
        if r.us then r.met = r.ms * 1000 <= r.target else r.met = r.frac >= r.target end
      end
      results[#results + 1] = r
    end
    x, y, mask, reset, indices = nil, nil, nil, nil, nil
    collectgarbage()
    collectgarbage()
  end
end

-- cases beyond the rows: odd lengths, promoted pairs, views. Each against a copy of its input (a
-- view copied into a contiguous tensor), counting its own bytes: input and output at their
-- dtypes' sizes, the mask at one byte an element.
local CASES = {}
if on_cuda then
  CASES = {
    { "f32 12345x999 dim2", function() return cs.rand({ 12345, 999 }, { seed = 11 }) end, 2 },
    { "f32 13000000x5 dim1", function() return cs.rand({ 13000000, 5 }, { seed = 12 }) end, 1 },
    { "f32 3x333333x7 dim2", function() return cs.rand({ 3, 333333, 7 }, { seed = 13 }) end, 2 },
    { "f32 2^24x2x2 dim2", function() return cs.rand({ 2 ^ 24, 2, 2 }, { seed = 14 }) end, 2 },
    { "f32->f64 32768x16384 dim2", function() return cs.rand({ 32768, 16384 }, { seed = 15 }) end, 2, dtype = "float64" },
    { "f32->f64 32768x16384 dim1", function() return cs.rand({ 32768, 16384 }, { seed = 16 }) end, 1, dtype = "float64" },
    { "i32->i64 32768x16384 dim2", function() return (cs.rand({ 32768, 16384 }, { seed = 17 }) * 100):to("int32") end, 2,
      dtype = "int64" },
    { "bool->i64 32768x32768 dim2", function() return cs.rand({ 32768, 32768 }, { seed = 18 }):lt(0.5) end, 2 },
    { "bool->i32 32768x32768 dim2", function() return cs.rand({ 32768, 32768 }, { seed = 19 }):lt(0.5) end, 2,
      dtype = "int32" },
    { "f32 stride-2 view dim2", function()
        return cs.rand({ 16384, 16384, 2 }, { seed = 20 }):select(3, 1) end, 2 },
    { "f32 narrow 32768x32767 dim2", function()
        return cs.rand({ 32768, 32768 }, { seed = 21 }):narrow(2, 2, 32767) end, 2 },
    { "f32 transposed 16384^2 dim1", function()
        return cs.rand({ 16384, 16384 }, { seed = 22 }):transpose(1, 2) end, 1 },
    { "f32 masked 1x2^28 dim2", function() return cs.rand({ 1, 2 ^ 28 }, { seed = 23 }) end, 2, masked = true },
    { "f32 2^22x16 dim2", function() return cs.rand({ 2 ^ 22, 16 }, { seed = 24 }) end, 2 },
    { "f32 2^15x2048 dim2", function() return cs.rand({ 2 ^ 15, 2048 }, { seed = 25 }) end, 2 },
    { "f64 2^21x16 dim2", function() return cs.rand({ 2 ^ 21, 16 }, { seed = 26, dtype = "float64" }) end, 2 },
    { "f32 16x2^22 dim1", function() return cs.rand({ 16, 2 ^ 22 }, { seed = 27 }) end, 1 },
    { "f32 64x4096x256 dim2", function() return cs.rand({ 64, 4096, 256 }, { seed = 28 }) end, 2 },
    { "f32 2^16x1024 dim1", function() return cs.rand({ 2 ^ 16, 1024 }, { seed = 29 }) end, 1 },
    { "f32 128x4000 dim2", function() return cs.rand({ 128, 4000 }, { seed = 30 }) end, 2 },
  }
else
  -- views, and a transposed input into a contiguous result (`contiguous`: out is a fresh contiguous
  -- tensor, not one laid out like x), each against a memcpy of its bytes on every core
  CASES = {
    { "cpu f32 transposed 4096^2 dim2 -> contiguous", function()
        return cs.rand({ 4096, 4096 }, { seed = 22 }):transpose(1, 2) end, 2, contiguous = true, target = 0.70 },
    { "cpu f32 contiguous 4096^2 dim2 -> transposed", function()
        return cs.rand({ 4096, 4096 }, { seed = 22 }) end, 2, transposed_out = true, target = 0.70 },
    { "cpu f32 transposed 4096^2 dim1", function()
        return cs.rand({ 4096, 4096 }, { seed = 22 }):transpose(1, 2) end, 1, target = 0.70 },
    { "cpu f32 narrow 4096x4095 dim2", function()
        return cs.rand({ 4096, 4096 }, { seed = 21 }):narrow(2, 2, 4095) end, 2, target = 0.70 },
    { "cpu f32 64x4096x64 dim2", function() return cs.rand({ 64, 4096, 64 }, { seed = 13 }) end, 2, target = 0.70 },
    { "cpu f32->f64 4096x4096 dim2", function() return cs.rand({ 4096, 4096 }, { seed = 15 }) end, 2,
      dtype = "float64", target = 0.70 },
    { "cpu i32 4096x4096 dim2", function() return (cs.rand({ 4096, 4096 }, { seed = 17 }) * 100):to("int32") end, 2,
      target = 0.70 },
    { "cpu masked f32 4096x4096 dim1", function() return cs.rand({ 4096, 4096 }, { seed = 23 }) end, 1, masked = true,
      target = 0.70 },
  }
end
local case_results = {}
local SIZE = { float32 = 4, float64 = 8, int32 = 4, int64 = 8, bool = 1, float16 = 2, bfloat16 = 2 }
local function copy_gbs_of(copy_ms, n, dtype) return 2 * n * SIZE[dtype] / copy_ms / 1e6 end
for _, case in ipairs(CASES) do
  if not opts.only or case[1]:find(opts.only, 1, true) then
    local x = case[2]()
    local shape = x:shape()
    local n = x:numel()
    local y = x:clone()
    local mask = case.masked and cs.rand(shape, { seed = 3 }):lt(0.5) or nil
    local out
    if case.contiguous then out = cs.empty(shape, { dtype = case.dtype or x.dtype })
    elseif case.transposed_out then out = cs.empty({ shape[2], shape[1] }, { dtype = case.dtype or x.dtype }):transpose(1, 2)
    else out = x:cumsum(case[3], { dtype = case.dtype, mask = mask }) end
    -- the floor: a copy of x on CUDA; on the CPU a memcpy of x's bytes on every core
    local src, dst = x, y
    if not on_cuda then src, dst = cs.ones({ n }, { dtype = x.dtype }), cs.ones({ n }, { dtype = x.dtype }) end
    local function copy_time() return time_ms(function() dst:copy(src) end, opts.reps) end
    local copy_ms = math.min(copy_time(), copy_time())
    local fn = function() x:cumsum(case[3], { dtype = case.dtype, mask = mask, out = out }) end
    local ms = math.min(time_ms(fn, opts.reps), time_ms(fn, opts.reps))
    copy_ms = math.min(copy_ms, copy_time())
    local bytes = n * (SIZE[x.dtype] + SIZE[out.dtype]) + (mask and n or 0)
    local copy_gbs = 2 * n * SIZE[x.dtype] / copy_ms / 1e6
    -- the same case through each kernel family that can take it (with --families)
    local by_family = {}
    if opts.families then
      for _, fam in ipairs({ "rows", "columns", "slabs" }) do
        cs.force_family(fam)
        if cs.explain(x, case[3], { dtype = case.dtype, mask = mask, out = out }):match("^cuda " .. fam .. "/") then
          local fms = math.min(time_ms(fn, opts.reps), time_ms(fn, opts.reps))
          by_family[#by_family + 1] = ("%s %.1f%%"):format(fam, 100 * bytes / fms / 1e6 / copy_gbs_of(copy_ms, n, x.dtype))
        end
      end
      cs.force_family(nil)
    end
    case_results[#case_results + 1] = { name = case[1], ms = ms, copy_ms = copy_ms, gbs = bytes / ms / 1e6,
      frac = bytes / ms / 1e6 / copy_gbs, target = case.target,
      plan = cs.explain(x, case[3], { dtype = case.dtype, mask = mask, out = out }),
      families = table.concat(by_family, ", ") }
    x, y, mask, out, src, dst = nil, nil, nil, nil, nil, nil
    collectgarbage()
    collectgarbage()
  end
end

-- element-wise ops on the CPU: each against a memcpy of 2^24 float32 on every core, counting its
-- own bytes (inputs read and output written once); results freed as a loop that frees them would,
-- so that their pages are reused
local EW_CASE, EW_SHAPE = "cpu f32 4096x4096 element-wise", { 4096, 4096 }
local ew_results = {}
if not on_cuda and (not opts.only or EW_CASE:find(opts.only, 1, true)) then
  local x = cs.rand(EW_SHAPE, { seed = 31 })
  local z = x + 1
  local y = x:clone()
  local xt = x:transpose(1, 2)
  local n = x:numel()
  local function free(t) t:free() end
  local EW = {
    { "mul_scalar", "x * 1", function() free(x * 1) end, 8 },
    { "add", "x + z", function() free(x + z) end, 12 },
    { "exp", "x:exp()", function() free(x:exp()) end, 8 },
    { "lt_scalar", "x:lt(0.5)", function() free(x:lt(0.5)) end, 5 },
    { "to_float64", "x:to(\"float64\")", function() free(x:to("float64")) end, 12 },
    { "transpose_copy", "y:copy(x:transpose(1, 2))", function() y:copy(xt) end, 8 },
    { "fill", "y:fill(3)", function() y:fill(3) end, 4 },
  }
  local function copy_time() return time_ms(function() y:copy(x) end, opts.reps) end
  local copy_ms = math.min(copy_time(), copy_time())
  for _, e in ipairs(EW) do
    local ms = math.min(time_ms(e[3], opts.reps), time_ms(e[3], opts.reps))
    ew_results[#ew_results + 1] = { op = e[1], expr = e[2], ms = ms, gbs = n * e[4] / ms / 1e6 }
  end
  copy_ms = math.min(copy_ms, copy_time())
  for _, r in ipairs(ew_results) do
    r.copy_ms, r.frac = copy_ms, r.gbs / (2 * n * 4 / copy_ms / 1e6)
    r.met = r.frac >= 0.70
  end
  x, z, y, xt = nil, nil, nil, nil
  collectgarbage()
  collectgarbage()
end

-- host overhead of a launch from Lua (asynchronous), on a small tensor (CUDA: the launch target)
local host_us
if on_cuda then
  local x = cs.rand({ 128, 4000 })
  local y = cs.rand({ 128, 4000 })
  local h0, h1 = cs.event("cpu"), cs.event("cpu")
  for _ = 1, 100 do cs.cumsum(x, 2, { out = y }) end
  cs.synchronize()
  local t = {}
  for i = 1, 9 do
    h0:record()
    for _ = 1, 200 do cs.cumsum(x, 2, { out = y }) end
    h1:record()
    t[i] = h0:elapsed(h1) * 1000 / 200
    cs.synchronize()
  end
  host_us = median(t)
end

-- transfers: x:cuda() and x:cpu() of 1 GiB against the host link's own speed (pinned buffers)
local transfer
if on_cuda then
  local ffi = require("ffi")
  local C = require("cuscan.core").C
  local h2d, d2h = ffi.new("double[1]"), ffi.new("double[1]")
  if C.cs_host_link_bandwidth(2 ^ 30, h2d, d2h) == 0 then
    local n = 2 ^ 28
    local host = cs.rand({ n }, { device = "cpu", seed = 4 })
    local h0, h1 = cs.event("cpu"), cs.event("cpu")
    local function wall_once(fn)
      cs.synchronize()
      h0:record()
      fn()
      cs.synchronize()
      h1:record()
      return h0:elapsed(h1)
    end
    local function wall(fn)
      local t = {}
      for i = 1, 5 do t[i] = wall_once(fn) end
      return median(t)
    end
    local dev
    local up = wall(function() dev = host:cuda() end)
    -- the first x:cpu() lands in fresh pages (the kernel faults and clears each one); after that each
    -- result is freed, as a loop that frees its results does, and its pages are reused
    cs.memory_trim("cpu")
    local first = wall_once(function() dev:cpu():free() end)
    local down = wall(function() dev:cpu():free() end)
    local gb = n * 4 / 1e9
    transfer = { link_up = h2d[0], link_down = d2h[0], up = gb / (up / 1e3), down = gb / (down / 1e3),
                 down_fresh = gb / (first / 1e3) }
  end
end

-- peers: PyTorch eager and torch.compile on the same rows (CUDA), NumPy (CPU; Debian's python3 has it
-- when the first python3 on PATH does not)
local peers = {}
local function numpy_python()
  for _, py in ipairs({ "python3", "/usr/bin/python3" }) do
    local ok = os.execute(py .. " -c 'import numpy' >/dev/null 2>&1")
    if ok == 0 or ok == true then return py end
  end
end
local python = on_cuda and not opts.no_torch and "python3" or not on_cuda and not opts.no_numpy and numpy_python()
if python then
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
  local cases_path = os.tmpname()
  local f = assert(io.open(cases_path, "w"))
  for _, r in ipairs(results) do
    f:write(string.format("%s,%s,%d,%s,%s\n", r.case, table.concat(r.shape, "x"), r.dim, r.dtype, r.op))
  end
  for _, r in ipairs(ew_results) do
    f:write(string.format("%s,%s,1,float32,%s\n", EW_CASE, table.concat(EW_SHAPE, "x"), r.op))
  end
  f:close()
  local cmd = on_cuda and string.format("python3 %scompare_torch.py %s --reps %d %s 2>/dev/null", here, cases_path,
                                        opts.reps, opts.compile and "--compile" or "")
              or string.format("%s %scompare_numpy.py %s --reps %d 2>/dev/null", python, here, cases_path, opts.reps)
  local p = io.popen(cmd)
  for line in p:lines() do
    local case, op, eager, compiled, copy = line:match("^([^,]+),([^,]+),([^,]*),([^,]*),([^,]*)$")
    if case then peers[case .. "|" .. op] = { eager = tonumber(eager), compiled = tonumber(compiled), copy = tonumber(copy) } end
  end
  p:close()
  os.remove(cases_path)
end

-- the table
-- the peers' columns: PyTorch eager and torch.compile on CUDA, NumPy on the CPU
local peer_a, peer_b, vs = "torch", "compile", "vs best"
if not on_cuda then peer_a, peer_b, vs = "numpy", "", "vs numpy" end
local header = string.format("%-22s %-25s %9s %9s %8s %7s %7s %4s %9s %9s %8s",
  "case", "op", "ms", "ms(2nd)", "GB/s", "%copy", "target", "met", peer_a, peer_b, vs)
print(header)
print(string.rep("-", #header))
local csv = opts.csv and assert(io.open(opts.csv, "w"))
-- peer_ms: PyTorch eager (CUDA) or NumPy (CPU)
if csv then csv:write("device,date,case,op,ms,ms_second,gbs,copy_ms,copy_gbs,frac_copy,target,met,peer_ms,torch_compile_ms,speedup_vs_best_peer\n") end
local last_case
for _, r in ipairs(results) do
  if r.case ~= last_case then
    print(string.format("%-22s %-25s %9.4f %9s %8.0f %7s", r.case, on_cuda and "(device copy)" or "(memcpy, all cores)",
      r.copy_ms, "", r.copy_gbs, "100%"))
    last_case = r.case
  end
  local peer = peers[r.case .. "|" .. r.op]
  local best = peer and math.min(peer.eager or math.huge, peer.compiled or math.huge)
  local speedup = best and best < math.huge and best / r.ms or nil
  local target = r.target and (r.us and string.format("<=%gus", r.target) or string.format(">=%d%%", r.target * 100)) or ""
  print(string.format("%-22s %-25s %9.4f %9.4f %8.0f %6.1f%% %7s %4s %9s %9s %8s", r.case, r.op, r.ms, math.max(r.ms1, r.ms2),
    r.gbs, 100 * r.frac, target, r.met == nil and "" or (r.met and "yes" or "NO"),
    peer and peer.eager and string.format("%.4f", peer.eager) or "-",
    peer and peer.compiled and string.format("%.4f", peer.compiled) or (on_cuda and "-" or ""),
    speedup and string.format("%.2fx", speedup) or "-"))
  if csv then
    csv:write(string.format("%s,%s,%s,%s,%.5f,%.5f,%.1f,%.5f,%.1f,%.4f,%s,%s,%s,%s,%s\n", info and info.name or "cpu", date,
      r.case, r.op, r.ms, math.max(r.ms1, r.ms2), r.gbs, r.copy_ms, r.copy_gbs, r.frac, r.target or "",
      r.met == nil and "" or tostring(r.met), peer and peer.eager or "", peer and peer.compiled or "", speedup or ""))
  end
end
for _, line in ipairs(skipped) do print("not run: " .. line) end
if #case_results > 0 then
  print(string.format("\n%-44s %9s %9s %8s %7s %7s %4s  %s", "case (cumsum)", "ms", "copy ms", "GB/s", "%floor", "target",
    "met", "plan"))
  for _, r in ipairs(case_results) do
    print(string.format("%-44s %9.4f %9.4f %8.0f %6.1f%% %7s %4s  %s", r.name, r.ms, r.copy_ms, r.gbs, 100 * r.frac,
      r.target and string.format(">=%d%%", r.target * 100) or "", r.target and (r.frac >= r.target and "yes" or "NO") or "",
      r.plan))
    if r.families ~= "" then print(string.format("%-44s forced: %s", "", r.families)) end
  end
end
if #ew_results > 0 then
  print(string.format("\n%-28s %9s %8s %7s %7s %4s %9s %8s", "element-wise (" .. EW_CASE:sub(5) .. ")", "ms", "GB/s",
    "%copy", "target", "met", "numpy", "vs numpy"))
  for _, r in ipairs(ew_results) do
    local peer = peers[EW_CASE .. "|" .. r.op]
    print(string.format("%-28s %9.4f %8.0f %6.1f%% %7s %4s %9s %8s", r.expr, r.ms, r.gbs, 100 * r.frac, ">=70%",
      r.met and "yes" or "NO", peer and peer.eager and string.format("%.4f", peer.eager) or "-",
      peer and peer.eager and string.format("%.2fx", peer.eager / r.ms) or "-"))
  end
  print(string.format("(the copy: %.4f ms for 2^24 float32 on every core)", ew_results[1].copy_ms))
end
if host_us then
  print(string.format("host time to launch one scan from Lua (128x4000, asynchronous): %.2f us (target <= 10 us)", host_us))
end
if transfer then
  print(string.format("1 GiB x:cuda() %.1f GB/s = %.0f%% of the link's %.1f GB/s; x:cpu() %.1f GB/s = %.0f%% of %.1f GB/s (target >= 80%%)",
    transfer.up, 100 * transfer.up / transfer.link_up, transfer.link_up,
    transfer.down, 100 * transfer.down / transfer.link_down, transfer.link_down))
  print(string.format("  (x:cpu() into fresh pages, the first call: %.1f GB/s = %.0f%%; the median above reuses the freed result's pages)",
    transfer.down_fresh, 100 * transfer.down_fresh / transfer.link_down))
end
if csv then csv:close() end

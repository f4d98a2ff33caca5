-- bench/tune/flagslabs_cells.lua - the cells of bench/tune/flagslabs.cu's comparisons: float32 and
-- float64 cummax, segmented cumsum and logcumsumexp of {outer, L, inner} shapes of 2^26 (float32) or
-- 2^25 (float64) elements along dim 2, each checked against the CPU (cummax and segmented exactly on
-- integer-valued inputs, logcumsumexp within 2e-6 / 1e-13 relative), a digest of every 97th byte of
-- its outputs printed (a quick comparison of two variants' bits), then timed: % of its floor (bytes
-- read and written once) at the copy's speed measured in the same process, median of REPS.
--   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libflagslabs.so luajit bench/tune/flagslabs_cells.lua
-- Environment: OPS (e.g. "cummax,segmented"), DTYPES ("float64"), REPS (10), NOCHECK=1 (timing
-- only), SHRINK=k (shapes k times smaller), DEV=cpu (a dry run on the CPU backend).
local DEV = os.getenv("DEV") or "cuda"
local cs = require("cuscan")
local ffi = require("ffi")
local timer = dofile("bench/event_timer.lua")
local time_ms = timer.on(DEV)
local REPS = tonumber(os.getenv("REPS") or "10")
local variant = os.getenv("TUNE_VARIANT") or "0"
local function bytes(t)
  t = t:cpu():contiguous()
  local size = ({ float32 = 4, float64 = 8, int64 = 8 })[t.dtype]
  return ffi.string(t:data_ptr(), t:numel() * size)
end
local function digest(s)
  local h = 2166136261
  for i = 1, #s, 97 do h = bit.bxor(h, s:byte(i)) * 16777619 % 4294967296 end
  return ("%08x"):format(h)
end
local shapes = { {2,1},{2,4},{3,7},{8,2},{8,16},{32,4},{32,64},{128,2},{128,16},{999,3},{1024,8},{8192,4},{65536,2} }
local only = os.getenv("OPS"); if only == "" then only = nil end
local ops = { "cummax", "segmented", "logcumsumexp" }
local bad = 0
local dtypes = {}; for d in (os.getenv("DTYPES") or "float32,float64"):gmatch("[^,]+") do dtypes[#dtypes + 1] = d end
for _, dtype in ipairs(dtypes) do
  local N = (dtype == "float32" and 2^26 or 2^25) / (tonumber(os.getenv("SHRINK") or "1"))
  local es = dtype == "float32" and 4 or 8
  for _, op in ipairs(ops) do
    if not only or only:find(op) then
    for _, sh in ipairs(shapes) do
      local L, inner = sh[1], sh[2]
      local outer = math.floor(N / (L * inner))
      local shape = { outer, L, inner }
      local x = cs.rand(shape, { dtype = dtype, seed = 7, device = DEV })
      if op == "logcumsumexp" then x = x * 20 - 10 else x = (x * 16):to("int32"):to(dtype) end
      local reset = op == "segmented" and cs.rand(shape, { seed = 9, device = DEV }):lt(0.2) or nil
      local out = cs.full(shape, 0 / 0, { dtype = dtype, device = DEV })
      local idx = cs.full(shape, -5, { dtype = "int64", device = DEV })
      local function run(xx, o, i, r)
        if op == "segmented" then return xx:cumsum(2, { out = o, reset = r }) end
        if op == "logcumsumexp" then return xx:logcumsumexp(2, { out = o }) end
        return xx:cummax(2, { out = { o, i } })
      end
      local plan = cs.explain(x, 2, { op = op == "segmented" and "cumsum" or op, reset = reset })
      local okrun, err = pcall(run, x, out, idx, reset)
      local ok, note = false, ""
      if okrun and os.getenv("NOCHECK") then ok = true; note = "unchecked"
      elseif okrun then
        local xc, rc = x:cpu(), reset and reset:cpu() or nil
        local oc = cs.empty(shape, { dtype = dtype, device = "cpu" })
        local ic = cs.empty(shape, { dtype = "int64", device = "cpu" })
        run(xc, oc, ic, rc)
        if op == "logcumsumexp" then
          local tol = dtype == "float32" and 2e-6 or 1e-13
          local g = out:cpu():to("float64"); local r = oc:to("float64")
          local err = g:numel() > 0 and ((g - r):abs() / r:abs():maximum(1)):max() or 0
          ok = err <= tol; note = ("relerr %.2g"):format(err)
        else
          ok = bytes(out) == bytes(oc) and (op ~= "cummax" or bytes(idx) == bytes(ic))
        end
        note = note .. " digest " .. digest(bytes(out)) .. (op == "cummax" and digest(bytes(idx)) or "")
      else
        note = tostring(err)
      end
      if not ok then bad = bad + 1 end
      local copy = time_ms(function() out:copy(x) end, REPS)
      local t = okrun and time_ms(function() run(x, out, idx, reset) end, REPS) or 0 / 0
      local floor = op == "cummax" and 2 * es + 8 or op == "segmented" and 2 * es + 1 or 2 * es
      print(("v%s %-8s %-12s %-16s pct %5.1f ms %.4f ok=%s %s %s"):format(variant, dtype, op, table.concat(shape, "x"),
        100 * floor / (2 * es) * copy / t, t, tostring(ok), plan, note))
      io.stdout:flush()
      x, out, idx, reset = nil; collectgarbage()
    end
    end
  end
end
print(("v%s cells not right: %d"):format(variant, bad))

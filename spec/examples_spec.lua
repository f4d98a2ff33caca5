-- The example scripts, each run through bin/cuscan on a small size: their verification lines and
-- exit statuses, their output files, and that each check fails when the scan it relies on is
-- broken (a chunk given with -e replaces a tensor method before the script runs).
local cs = require("cuscan")

local shell = require("spec.support.shell")
local root, q, tmpdir = shell.root, shell.q, shell.tmpdir
local CUSCAN = shell.cuscan
local EX = root .. "/examples/"

local slurp = shell.slurp

-- Runs a shell command; returns stdout, stderr and the exit status. env: a table of variables.
local function run(cmd, env, cwd)
  local base = os.tmpname()
  local pre = {}
  if cwd then pre[#pre + 1] = "cd " .. q(cwd) .. " &&" end
  for k, v in pairs(env or {}) do pre[#pre + 1] = "export " .. k .. "=" .. q(v) .. ";" end
  local p = io.popen(("(%s %s) </dev/null >%s 2>%s; echo $?"):format(table.concat(pre, " "), cmd, q(base .. ".out"),
                                                                    q(base .. ".err")))
  local status = tonumber(p:read("*a"):match("(%d+)%s*$"))
  p:close()
  local out, err = slurp(base .. ".out") or "", slurp(base .. ".err") or ""
  os.remove(base); os.remove(base .. ".out"); os.remove(base .. ".err")
  return out, err, status
end

local function example(name, args, env, patch)
  local cmd = q(CUSCAN) .. (patch and (" -e " .. q(patch)) or "") .. " " .. q(EX .. name) .. " " .. (args or "")
  return run(cmd, env)
end

local function lines_of(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

local function have_gnuplot()
  local _, _, status = run("command -v gnuplot")
  return status == 0
end

-- A chunk that replaces a tensor method; `body` is a function(orig, x, ...) written in Lua source.
local function patch(method, body)
  return ("local M = require('cuscan.core').methods; local orig = M.%s; M.%s = function(...) return (%s)(orig, ...) end")
         :format(method, method, body)
end

local DEV = cs.default_device()

describe("examples/demo.lua", function()
  it("verifies and times the three seed problems on a small size", function()
    local out, err, status = example("demo.lua", "96", { CUSCAN_DEMO_RUNS = "3" })
    assert.equal(0, status, out .. err)
    local l = lines_of(out)
    assert.equal(5, #l, out)
    assert.matches("^cuscan " .. cs.version:gsub("%p", "%%%0") .. " demo on " .. DEV .. ".*float32 96 x 96", l[1])
    for i, label in ipairs({ "cumprod", "reverse cumsum", "masked cumsum" }) do
      assert.matches("^" .. label .. "%s+[%d.]+ ms%s+[%d.]+ GB/s%s+PASS %(8 sampled rows against a float64 Lua loop: " ..
                     "max rel error [%d.e+-]+, tolerance 1e%-0[45]%)$", l[i + 1])
    end
    assert.equal("all 3 problems PASS", l[5])
  end)

  it("takes its size from CUSCAN_DEMO_N and says FAIL, exiting 1, when a result is wrong", function()
    local broken = patch("cumprod", "function(orig, x, dim, o) local r = orig(x, dim, o); r:narrow(2, 40, 1):fill(2) return r end")
    local out, _, status = example("demo.lua", "", { CUSCAN_DEMO_N = "64", CUSCAN_DEMO_RUNS = "1" }, broken)
    assert.equal(1, status, out)
    assert.matches("float32 64 x 64", out, 1, true)
    assert.matches("\ncumprod%s+[%d.]+ ms%s+[%d.]+ GB/s%s+FAIL", out)
    assert.matches("\nreverse cumsum%s+[%d.]+ ms%s+[%d.]+ GB/s%s+PASS", out)
    assert.matches("\n1 of 3 problems FAIL\n$", out)
  end)

  it("is what make demo runs", function()
    local vars = shell.fresh_build_vars()
    if not vars then
      pending("the library in use is not the source tree's up-to-date build (run `make test`)")
      return
    end
    local out, err, status = run("make -s --no-print-directory " .. vars .. " demo",
                                 { CUSCAN_DEMO_N = "80", CUSCAN_DEMO_RUNS = "1" }, root)
    assert.equal(0, status, out .. err)
    assert.matches("float32 80 x 80", out, 1, true)
    assert.matches("\nall 3 problems PASS\n$", out)
  end)
end)

describe("examples/discounted_returns.lua", function()
  it("matches the plain loop in one block", function()
    local out, err, status = example("discounted_returns.lua", "--episodes 40 --steps 300 --gamma 0.9")
    assert.equal(0, status, out .. err)
    assert.matches("^discounted returns: 40 episodes x 300 steps, gamma 0.9, float64 on " .. DEV, out)
    assert.matches("\n  1 block of at most 5694 steps", out, 1, true)
    assert.matches("\ncheck against the plain loop on 40 episodes: max error [%d.e+-]+ %(tolerance 1e%-09%), " ..
                   "0 non%-finite: PASS\n$", out)
  end)

  it("matches the plain loop when the powers of gamma need several blocks, in float64 and float32", function()
    local out, err, status = example("discounted_returns.lua", "--episodes 12 --steps 2000 --gamma 0.5")
    assert.equal(0, status, out .. err)
    assert.matches("\n  3 blocks of at most 865 steps", out, 1, true)
    assert.matches("PASS\n$", out)
    out, err, status = example("discounted_returns.lua", "--episodes 6 --steps 9000 --gamma 0.99 --dtype float32")
    assert.equal(0, status, out .. err)
    assert.matches("\n  3 blocks of at most 3979 steps", out, 1, true)
    assert.matches("%(tolerance 1e%-04%), 0 non%-finite: PASS\n$", out)
  end)

  it("fails its check when the padding is not masked out", function()
    local nomask = patch("cumsum", "function(orig, x, dim, o) if o then o.mask = nil end return orig(x, dim, o) end")
    local out, _, status = example("discounted_returns.lua", "--episodes 20 --steps 200", nil, nomask)
    assert.equal(1, status, out)
    assert.matches("[1-9]%d* non%-finite: FAIL\n$", out)
  end)

  it("rejects unknown options with its usage", function()
    local _, err, status = example("discounted_returns.lua", "--frobnicate 3")
    assert.equal(2, status)
    assert.matches("usage: discounted_returns.lua", err, 1, true)
  end)
end)

describe("examples/ragged_offsets.lua", function()
  it("builds offsets, running totals and packed indices that match plain loops", function()
    local out, err, status = example("ragged_offsets.lua", "--rows 50 --maxlen 9")
    assert.equal(0, status, out .. err)
    assert.matches("^ragged batch: 50 rows of 0..9 items %(%d+ in all%), int32 on " .. DEV .. "; offsets in int32", out)
    assert.matches("\n      row  length    offset  row total\n        1 ", out, 1, false)
    assert.matches("\ncheck against plain loops %(50 rows%): offsets ok, running totals ok, packed indices ok: PASS\n$", out)
    -- the first row's offset is 0 and the second starts where the first ends
    local l = lines_of(out)
    local len1, off1 = l[3]:match("^%s+1%s+(%d+)%s+(%d+)")
    local off2 = l[4]:match("^%s+2%s+%d+%s+(%d+)")
    assert.equal("0", off1)
    assert.equal(len1, off2)
  end)

  it("fails its check when the offsets are not exclusive", function()
    local inclusive = patch("cumsum", "function(orig, x, dim, o) if o then o.exclusive = nil end return orig(x, dim, o) end")
    local out, _, status = example("ragged_offsets.lua", "--rows 30 --maxlen 5", nil, inclusive)
    assert.equal(1, status, out)
    assert.matches("offsets WRONG, running totals ok, packed indices WRONG: FAIL\n$", out)
  end)
end)

describe("examples/segmented_totals.lua", function()
  it("keeps per-session and per-user running totals of an event log that match a loop over it", function()
    local out, err, status = example("segmented_totals.lua", "--events 3000 --users 20 --seed 5")
    assert.equal(0, status, out .. err)
    assert.matches("^event log: 3000 events of %d+ users in %d+ sessions %([%d.]+ events a session%) on " .. DEV, out)
    assert.matches("\n  session   user  events     spent  largest purchase %(event%)\n        1      1 ", out)
    assert.matches("\ncheck against a loop over the log: session totals ok, event numbers ok, largest purchases ok, " ..
                   "left to spend ok, lifetime totals ok: PASS\n$", out)
    -- a session's largest purchase is at most what it spent
    for spent, best in out:gmatch("\n%s+%d+%s+%d+%s+%d+%s+([%d.]+)%s+([%d.]+) %(%d+%)") do
      assert.is_true(tonumber(best) <= tonumber(spent))
    end
  end)

  it("fails its checks when a scan ignores its reset, its direction or its segments", function()
    local no_reset = patch("cumsum", "function(orig, x, dim, o) if o then o.reset = nil end return orig(x, dim, o) end")
    local out, _, status = example("segmented_totals.lua", "--events 2000 --users 10", nil, no_reset)
    assert.equal(1, status, out)
    assert.matches("session totals WRONG, event numbers WRONG, largest purchases ok, left to spend ok, " ..
                   "lifetime totals ok: FAIL\n$", out)
    local max_no_reset = patch("cummax", "function(orig, x, dim, o) if o then o.reset = nil end return orig(x, dim, o) end")
    out, _, status = example("segmented_totals.lua", "--events 2000 --users 10", nil, max_no_reset)
    assert.equal(1, status, out)
    assert.matches("largest purchases WRONG, left to spend ok, lifetime totals ok: FAIL\n$", out)
    local forward = patch("cumsum", "function(orig, x, dim, o) if o then o.reverse = nil end return orig(x, dim, o) end")
    out, _, status = example("segmented_totals.lua", "--events 2000 --users 10", nil, forward)
    assert.equal(1, status, out)
    assert.matches("session totals ok, event numbers ok, largest purchases ok, left to spend WRONG, " ..
                   "lifetime totals ok: FAIL\n$", out)
  end)
end)

describe("examples/survival_curve.lua", function()
  it("prints the table, passes its checks and writes a CSV without gnuplot", function()
    local dir = tmpdir()
    local out, err, status = example("survival_curve.lua", "--subjects 400 --steps 24 --out " .. q(dir .. "/sc"),
                                     { GNUPLOT = "/nonexistent/gnuplot" })
    assert.equal(0, status, out .. err)
    assert.matches("^survival: 400 subjects x 24 steps on " .. DEV, out)
    assert.matches("\n     t   at risk   events  censored  Kaplan%-Meier   model S%(t%)\n", out)
    assert.matches("\n     3       %d+ ", out)
    assert.matches("ok; at risk, events and Kaplan%-Meier vs a loop over 400 subjects ok; .* ok: PASS\n", out)
    assert.matches("\nwrote " .. (dir .. "/sc.csv"):gsub("%p", "%%%0") .. "\n$", out)
    local csv = lines_of(slurp(dir .. "/sc.csv"))
    assert.equal(25, #csv)
    assert.equal("t,at_risk,events,censored,kaplan_meier,model", csv[1])
    assert.matches("^1,400,%d+,0,0%.9%d+,0%.9%d+$", csv[2])
    os.execute("rm -rf " .. q(dir))
  end)

  it("writes a PNG through gnuplot when it is installed", function()
    if not have_gnuplot() then pending("gnuplot is not installed") return end
    local dir = tmpdir()
    local out, err, status = example("survival_curve.lua", "--subjects 200 --steps 16 --out " .. q(dir .. "/sc"))
    assert.equal(0, status, out .. err)
    assert.matches("\nwrote " .. (dir .. "/sc.png"):gsub("%p", "%%%0") .. "\n$", out)
    assert.equal("\137PNG", (slurp(dir .. "/sc.png") or ""):sub(1, 4))
    os.execute("rm -rf " .. q(dir))
  end)

  it("fails its check when the survival curves are wrong", function()
    local broken = patch("cumprod", "function(orig, x, dim, o) local r = orig(x, dim, o); return r * 1.001 end")
    local dir = tmpdir()
    local out, _, status = example("survival_curve.lua", "--subjects 100 --steps 12 --out " .. q(dir .. "/sc"),
                                   { GNUPLOT = "/nonexistent/gnuplot" }, broken)
    os.execute("rm -rf " .. q(dir))
    assert.equal(1, status, out)
    assert.matches("max rel error [%d.e+-]+ WRONG", out)
    assert.matches("FAIL\n", out, 1, true)
  end)
end)

describe("examples/bench_sweep.lua", function()
  it("prints GB/s against size for each op, a progress bar on stderr, and a CSV without gnuplot", function()
    local dir = tmpdir()
    local out, err, status = example("bench_sweep.lua", "--min 4 --max 7 --runs 2 --out " .. q(dir .. "/bs"),
                                     { GNUPLOT = "/nonexistent/gnuplot" })
    assert.equal(0, status, out .. err)
    local l = lines_of(out)
    assert.equal(7, #l, out)
    assert.matches("^GB/s of float32 scans along dim 2 on " .. DEV, l[1])
    assert.matches("^%s+elements%s+shape%s+copy%s+cumsum%s+cumprod%s+reverse_cumsum%s+masked_cumsum$", l[2])
    for i, shape in ipairs({ "4x4", "4x8", "8x8", "8x16" }) do
      assert.matches(("^%%s+%d%%s+%s%%s+[%%d.]+%%s+[%%d.]+%%s+[%%d.]+%%s+[%%d.]+%%s+[%%d.]+$"):format(2 ^ (i + 3), shape),
                     l[i + 2])
    end
    assert.equal("wrote " .. dir .. "/bs.csv", l[7])
    assert.matches("%[#+%] 100%% 20/20 done", err)
    assert.matches("%[%.+%]%s+0%% 0/20", err)
    local csv = lines_of(slurp(dir .. "/bs.csv"))
    assert.equal(5, #csv)
    assert.matches("^elements,rows,cols,copy_gbs,cumsum_gbs", csv[1])
    assert.matches("^128,8,16,[%d.]+,", csv[5])
    os.execute("rm -rf " .. q(dir))
  end)

  it("draws a PNG through gnuplot when it is installed, for either dim", function()
    if not have_gnuplot() then pending("gnuplot is not installed") return end
    local dir = tmpdir()
    local out, err, status = example("bench_sweep.lua", "--min 4 --max 5 --dim 1 --runs 1 --out " .. q(dir .. "/bs"))
    assert.equal(0, status, out .. err)
    assert.matches("along dim 1", out, 1, true)
    assert.equal("\137PNG", (slurp(dir .. "/bs.png") or ""):sub(1, 4))
    os.execute("rm -rf " .. q(dir))
  end)

  it("stops before measuring when an op gives wrong results", function()
    local broken = patch("cumsum", "function(orig, x, dim, o) if o then o.reverse = nil end return orig(x, dim, o) end")
    local out, err, status = example("bench_sweep.lua", "--min 4 --max 5 --runs 1", { GNUPLOT = "/nonexistent/gnuplot" },
                                     broken)
    assert.equal(1, status, out .. err)
    assert.matches("bench_sweep: reverse_cumsum gives wrong results", err, 1, true)
    assert.equal("", out)
  end)
end)

describe("examples/npy_scan.lua", function()
  it("writes prices, loads them, scans, saves and reads the result back", function()
    local dir = tmpdir()
    local out, err, status = example("npy_scan.lua", "--days 120 --assets 7 --out " .. q(dir .. "/cum.npy"))
    assert.equal(0, status, out .. err)
    local l = lines_of(out)
    assert.equal(("wrote %s/prices.npy: 120 days x 7 assets of prices"):format(dir), l[1])
    assert.equal(("loaded %s/prices.npy: float64 120x7 on %s"):format(dir, DEV), l[2])
    assert.equal(("saved %s/cum.npy and read it back: the same float64 values"):format(dir), l[3])
    assert.matches("^check against a plain loop on 7 assets: max error [%d.e+-]+ %(tolerance 1e%-09%): PASS$", l[4])
    assert.equal("\147NUMPY", (slurp(dir .. "/cum.npy") or ""):sub(1, 6))
    -- the result is the cumulative log return: its last row is log(p[last] / p[1])
    local p, c = cs.load(dir .. "/prices.npy", { device = "cpu" }), cs.load(dir .. "/cum.npy", { device = "cpu" })
    local want = (p:select(1, 120) / p:select(1, 1)):log()
    assert.is_true(cs.allclose(c:select(1, 120), want, { rtol = 1e-12, atol = 1e-12 }))
    os.execute("rm -rf " .. q(dir))
  end)

  it("loads a file NumPy wrote, in Fortran order, read or mapped", function()
    local dir = tmpdir()
    for _, mmap in ipairs({ "0", "1" }) do
      local out, err, status = example("npy_scan.lua", "--in " .. q(root .. "/spec/fixtures/numpy/float64_fortran_3x4.npy") ..
                                       " --mmap " .. mmap .. " --out " .. q(dir .. "/r.npy"))
      assert.equal(0, status, out .. err)
      assert.matches("float64 3x4 on " .. (mmap == "1" and "cpu %(memory map%)" or DEV) .. "\n", out)
      assert.matches("on 4 assets: max error [%d.e+-]+ %(tolerance 1e%-09%): PASS\n$", out)
    end
    os.execute("rm -rf " .. q(dir))
  end)

  it("fails its check when the scan is wrong or the file does not keep the values", function()
    local dir = tmpdir()
    local args = "--days 50 --assets 3 --out " .. q(dir .. "/cum.npy")
    local out, _, status = example("npy_scan.lua", args, nil,
                                   patch("cumsum", "function(orig, x, dim, o) return orig(x, dim, {exclusive = true}) end"))
    assert.equal(1, status, out)
    assert.matches("max error [%d.e+-]+ %(tolerance 1e%-09%): FAIL\n$", out)
    local lossy = "local cs = require('cuscan'); local save = cs.save; cs.save = function(p, x, o) return save(p, x:to('float32'):to('float64'), o) end"
    out, _, status = example("npy_scan.lua", args, nil, lossy)
    assert.equal(1, status, out)
    assert.matches("read it back: DIFFERENT values\n", out, 1, true)
    assert.matches("FAIL\n$", out)
    os.execute("rm -rf " .. q(dir))
  end)

  it("rejects unknown options with its usage", function()
    local _, err, status = example("npy_scan.lua", "--days many")
    assert.equal(2, status)
    assert.matches("usage: npy_scan.lua", err, 1, true)
  end)
end)

describe("bench/grid_plot.lua", function()
  it("draws one heat map a dtype and mask from a shape grid's CSV when gnuplot is installed", function()
    local shell = require("spec.support.shell")
    local _, has = shell.sh("command -v gnuplot")
    if has ~= 0 then pending("gnuplot is not installed") return end
    local dir = shell.tmpdir()
    local out, status = shell.sh(("cd %s && luajit bench/grid_plot.lua bench/grid-2026-11-22-h100.csv %s/grid")
      :format(shell.q(shell.root), shell.q(dir)))
    assert.equal(0, status, out)
    for _, key in ipairs({ "float32", "float64", "float32-masked", "float64-masked" }) do
      local png = shell.slurp(dir .. "/grid-" .. key .. ".png")
      assert.is_string(png, key)
      assert.equal("\137PNG", png:sub(1, 4))
    end
    os.execute("rm -rf " .. shell.q(dir))
  end)
end)

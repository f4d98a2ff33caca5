-- The multi-process mode on CPU stand-ins: bin/cuscan --nproc, the rank variables (the launcher's,
-- Open MPI's, PMI's), the rendezvous directory and the file communicator, cs.shard_local scans
-- against the unsharded scan and the one-process sharded scan, failures and argument errors.
local H = require("spec.helpers")
local shell = require("spec.support.shell")
local q = shell.q

local CUSCAN = shell.cuscan

local function script(text)
  local base = os.tmpname()   -- (made as a file: only its name is wanted)
  os.remove(base)
  local path = base .. ".lua"
  shell.spit(path, text)
  return path
end

-- env: a table of variables for the command (CUSCAN_DEVICE=cpu unless given; false: unset, so that
-- the launcher gives each process its GPU)
local function run(cmd, env)
  local dev = env and env.CUSCAN_DEVICE
  if dev == nil then dev = "cpu" end
  local parts = { dev and ("CUSCAN_DEVICE=" .. q(dev)) or "" }
  for k, v in pairs(env or {}) do
    if k ~= "CUSCAN_DEVICE" then parts[#parts + 1] = k .. "=" .. q(v) end
  end
  return shell.sh(("env -u CUSCAN_DEVICE -u CUSCAN_RANK -u CUSCAN_WORLD_SIZE -u CUSCAN_RENDEZVOUS -u OMPI_COMM_WORLD_SIZE " ..
                   "-u PMI_SIZE %s %s"):format(table.concat(parts, " "), cmd))
end

-- Every rank builds the same whole tensors from seeds, scans its part as a shard_local tensor and
-- compares with the whole tensor's scan (bits for integers) and with cs.shard over CPU stand-ins
-- of the same sizes (bits: the same totals folded in the same order).
local SCANS = [==[
local cs = require("cuscan")
local d = cs.distributed()
assert(d and (d.device == "cpu") == (arg[2] == "cpu"), "expected the multi-process mode on " .. arg[2])
local seed = tonumber(arg[1])
local checked = 0
local function same(a, b, exact)
  local A, B = a:to("float64"), b:to("float64")
  if exact then assert(A:eq(B):sum() == A:numel(), "values differ") return end
  assert(cs.allclose(A, B, { rtol = 1e-5, atol = 1e-5 }), "values differ: " .. cs.max_abs_diff(A, B))
end
local cpus = {}
for r = 1, d.world_size do cpus[r] = "cpu" end
for _, c in ipairs({ { "cumsum", "int64" }, { "cumsum", "float32" }, { "cumprod", "float64" }, { "logcumsumexp", "float64" },
                     { "cumsum", "int32" }, { "cumprod", "int64" } }) do
  for _, rows in ipairs({ 1, 2, 5, 9 }) do
    local whole = cs.rand({ rows, 4 }, { seed = seed + rows, dtype = "float64" })
    if c[2]:match("int") then whole = ((whole - 0.5) * 20):to(c[2]) else whole = (whole + 0.5):to(c[2]) end
    local mask = cs.rand({ rows, 4 }, { seed = seed + 7 * rows }):gt(0.3)
    local sizes = cs.shard_sizes(rows, d.world_size)
    local at = 1
    for r = 1, d.rank do at = at + sizes[r] end
    local mine = whole:narrow(1, at, sizes[d.rank + 1]):contiguous()
    local s = cs.shard_local(mine, 1)
    assert(s.rank == d.rank and s.world_size == d.world_size)
    local one = cs.shard(whole, 1, cpus)
    for _, dim in ipairs({ 1, 2 }) do
      for _, o in ipairs({ {}, { reverse = true }, { exclusive = true }, { reverse = true, exclusive = true },
                           { mask = "plain" }, { mask = "sharded", reverse = true }, { out = true } }) do
        local so, po = {}, {}
        for k, v in pairs(o) do so[k], po[k] = v, v end
        if o.mask then
          po.mask = mask
          so.mask = o.mask == "plain" and mask or cs.shard_local(mask:narrow(1, at, sizes[d.rank + 1]):contiguous(), 1)
        end
        po.out = nil
        local want = cs[c[1]](whole, dim, po)
        if o.out then so.out = cs.shard_local(cs.full(mine:shape(), -7, { dtype = want.dtype }), 1) end
        local got = cs[c[1]](s, dim, so)
        if o.out then assert(got == so.out, "out is returned") end
        local g = got:gather()
        same(want:cpu(), g, not c[2]:match("float"))
        local oo = {}
        for k, v in pairs(po) do oo[k] = v end
        -- the one-process sharded scan on CPU stand-ins folds the same totals in the same order
        if d.device == "cpu" then same(cs[c[1]](one, dim, oo):gather(), g, true) end
        checked = checked + 1
      end
    end
  end
end
print("ok " .. checked)
]==]

describe("bin/cuscan --nproc on CPU stand-ins", function()
  it("runs every rank with its variables; shard_local scans match the unsharded and one-process scans", function()
    local path = script(SCANS)
    for _, n in ipairs({ 2, 3 }) do
      local out, status = run(("%s --nproc %d %s %d cpu"):format(q(CUSCAN), n, q(path), H.seed_for("dist scans") % 100000))
      assert.equal(0, status, out)
      for r = 0, n - 1 do assert.matches("%[rank " .. r .. "%] ok 336", out) end
    end
    os.remove(path)
  end)

  it("sets rank, world size, local rank, device and a rendezvous directory it removes afterwards", function()
    local path = script([[
      local cs = require("cuscan")
      local d = cs.distributed()
      print(os.getenv("CUSCAN_RANK"), os.getenv("CUSCAN_WORLD_SIZE"), os.getenv("CUSCAN_LOCAL_RANK"), d.device, d.rendezvous, arg[1])
    ]])
    local out, status = run(("%s --nproc 2 %s hello"):format(q(CUSCAN), q(path)))
    assert.equal(0, status, out)
    local dir
    for r = 0, 1 do
      local line = out:match("%[rank " .. r .. "%] ([^\n]*)")
      local f = {}
      for w in line:gmatch("%S+") do f[#f + 1] = w end
      assert.same({ tostring(r), "2", tostring(r), "cpu" }, { f[1], f[2], f[3], f[4] })
      assert.equal("hello", f[6])
      dir = dir or f[5]
      assert.equal(dir, f[5])
    end
    local _, gone = shell.sh("test -e " .. q(dir))
    assert.not_equal(0, gone)
    os.remove(path)
  end)

  it("stops the other ranks and exits with the failing rank's status", function()
    local path = script([[
      local cs = require("cuscan")
      local d = cs.distributed()
      if d.rank == 1 then io.stderr:write("rank one gives up\n"); os.exit(5) end
      cs.shard_local(cs.zeros({ 2 }), 1)   -- waits for rank 1, which never comes
      print("not reached")
    ]])
    local t0 = os.time()
    local out, status = run(("%s --nproc 2 %s"):format(q(CUSCAN), q(path)), { CUSCAN_RENDEZVOUS_TIMEOUT = "60" })
    assert.equal(5, status, out)
    assert.matches("[rank 1] rank one gives up", out, 1, true)
    assert.matches("cuscan: rank 1 exited with status 5", out, 1, true)
    assert.not_matches("not reached", out, 1, true)
    assert.is_true(os.time() - t0 < 30)
    os.remove(path)
  end)

  it("spans hosts: one launcher per node with --nnodes, --node-rank and a shared directory", function()
    local path = script([[
      local cs = require("cuscan")
      local d = cs.distributed()
      local s = cs.shard_local(cs.full({ d.rank + 1 }, d.rank + 1, { dtype = "int64" }), 1)
      print("rank", d.rank, "of", d.world_size, "local", d.local_rank, table.concat(s:cumsum(1):shards()[1]:totable(), ","))
    ]])
    local dir = shell.tmpdir()
    local env = ("CUSCAN_DEVICE=cpu CUSCAN_RENDEZVOUS=%s CUSCAN_RUN_ID=nodes"):format(q(dir))
    local out, status = shell.sh(("env %s %s --nnodes 2 --node-rank 1 --nproc 2 %s > %s/b.txt 2>&1 & " ..
                                  "env %s %s --nproc 2 --nnodes 2 --node-rank 0 %s > %s/a.txt 2>&1; a=$?; wait $!; b=$?; " ..
                                  "cat %s/a.txt %s/b.txt; exit $((a + b))")
                                 :format(env, q(CUSCAN), q(path), q(dir), env, q(CUSCAN), q(path), q(dir), q(dir), q(dir)))
    assert.equal(0, status, out)
    -- shards {1}, {2,2}, {3,3,3}, {4,4,4,4}: the cumsum runs across the four ranks of two "hosts"
    assert.matches("[rank 0] rank\t0\tof\t4\tlocal\t0\t1\n", out, 1, true)
    assert.matches("[rank 3] rank\t3\tof\t4\tlocal\t1\t18,22,26,30\n", out, 1, true)
    assert.matches("[rank 2] rank\t2\tof\t4\tlocal\t0\t8,11,14\n", out, 1, true)
    shell.sh("rm -rf " .. q(dir))
    os.remove(path)
  end)

  it("refuses bad launcher options", function()
    local cases = {
      { "--nproc 0 x.lua", "--nproc: expected an integer >= 1" },
      { "--nproc two x.lua", "--nproc: expected an integer >= 1" },
      { "--nproc 2", "--nproc: no script given" },
      { "--nproc 2 /nonexistent/x.lua", "cannot open the script" },
      { "--nproc 1 --nnodes 2 --node-rank 2 x.lua", "--node-rank: 2 is out of range for --nnodes 2" },
      { "--nproc 1 --nnodes 2 --node-rank 1 x.lua", "set CUSCAN_RENDEZVOUS" },
      { "--nnodes 2 x.lua", "go with --nproc" },
    }
    for _, c in ipairs(cases) do
      local out, status = run(q(CUSCAN) .. " " .. c[1])
      assert.equal(2, status, c[1] .. ": " .. out)
      assert.matches("cuscan: ", out, 1, true)
      assert.matches(c[2], out, 1, true)
    end
  end)
end)

describe("bin/cuscan --nproc on two GPUs #multigpu", function()
  local cs = H.cs
  local two = cs.cuda_available() and cs.device_count() >= 2
  local it = two and it or function(name) pending(name .. " (skipped: fewer than 2 CUDA devices)") end

  it("runs one process per GPU; shard_local scans through NCCL match the unsharded scan", function()
    local path = script(SCANS)
    local out, status = run(("%s --nproc 2 %s %d cuda"):format(q(CUSCAN), q(path), H.seed_for("dist gpu") % 100000),
                            { CUSCAN_DEVICE = false })
    assert.equal(0, status, out)
    for r = 0, 1 do assert.matches("%[rank " .. r .. "%] ok 336", out) end
    os.remove(path)
  end)

  it("runs examples/sharded_scan.lua in one process over both GPUs and in two processes", function()
    local ex = shell.root .. "/examples/sharded_scan.lua"
    local out, status = run(("%s %s 100001 33"):format(q(CUSCAN), q(ex)), { CUSCAN_DEVICE = false })
    assert.equal(0, status, out)
    assert.matches("^PASS .* over cuda:0, cuda:1", out)
    out, status = run(("%s --nproc 2 %s 100001 33"):format(q(CUSCAN), q(ex)), { CUSCAN_DEVICE = false })
    assert.equal(0, status, out)
    assert.matches("^%[rank 0%] PASS .* over 2 processes", out)
  end)
end)

describe("cs.distributed", function()
  local function lua(chunk, env)
    return run(("%s -e %s"):format(q(CUSCAN), q(chunk)), env)
  end

  it("is nil outside the multi-process mode, where shard_local is an error", function()
    local out, status = lua([[
      local cs = require("cuscan")
      print(cs.distributed())
      local ok, err = pcall(cs.shard_local, cs.zeros({ 2 }), 1)
      print(err)
    ]])
    assert.equal(0, status, out)
    assert.matches("^nil\n", out)
    assert.matches("cuscan: shard_local: not in the multi-process mode", out, 1, true)
  end)

  it("takes Open MPI's and PMI's ranks under mpirun", function()
    local dir = shell.tmpdir()
    local chunk = [[
      local cs = require("cuscan")
      local d = cs.distributed()
      print(d.rank, d.world_size, d.local_rank, cs.shard_local(cs.ones({ 3 }), 1):cumsum(1):totable()[3])
    ]]
    local out, status = lua(chunk, { OMPI_COMM_WORLD_SIZE = "1", OMPI_COMM_WORLD_RANK = "0",
                                     OMPI_COMM_WORLD_LOCAL_RANK = "0", CUSCAN_RENDEZVOUS = dir })
    assert.equal(0, status, out)
    assert.matches("^0\t1\t0\t3", out)
    out, status = lua(chunk, { PMI_SIZE = "1", PMI_RANK = "0", CUSCAN_RENDEZVOUS = dir })
    assert.equal(0, status, out)
    assert.matches("^0\t1\t0\t3", out)
    shell.sh("rm -rf " .. q(dir))
  end)

  it("gives clear errors for bad variables, no rendezvous directory and a rank that never comes", function()
    local dir = shell.tmpdir()
    local chunk = "local cs = require('cuscan'); cs.shard_local(cs.ones({ 3 }), 1)"
    local out = lua(chunk, { CUSCAN_WORLD_SIZE = "2", CUSCAN_RANK = "2", CUSCAN_RENDEZVOUS = dir })
    assert.matches("cuscan: distributed: CUSCAN_RANK: expected an integer in 0..1, got \"2\"", out, 1, true)
    out = lua(chunk, { CUSCAN_WORLD_SIZE = "2", CUSCAN_RENDEZVOUS = dir })
    assert.matches("cuscan: distributed: CUSCAN_RANK: not set", out, 1, true)
    out = lua(chunk, { CUSCAN_WORLD_SIZE = "2", CUSCAN_RANK = "0" })
    assert.matches("cuscan: distributed: CUSCAN_RENDEZVOUS: not set", out, 1, true)
    local status
    out, status = lua(chunk, { PMI_SIZE = "2", PMI_RANK = "1", CUSCAN_RENDEZVOUS = dir, CUSCAN_RENDEZVOUS_TIMEOUT = "0.3" })
    assert.not_equal(0, status)
    assert.matches("(command line):1: cuscan: distributed: rendezvous: rank 0's part", out, 1, true)
    assert.matches("did not appear within 0.3 s", out, 1, true)
    shell.sh("rm -rf " .. q(dir))
  end)

  it("refuses ranks whose shards differ other than along the sharded dim", function()
    local path = script([[
      local cs = require("cuscan")
      local d = cs.distributed()
      cs.shard_local(cs.ones({ 2, 3 + d.rank }), 1)
    ]])
    local out, status = run(("%s --nproc 2 %s"):format(q(CUSCAN), q(path)))
    assert.not_equal(0, status)
    -- whichever rank finds it first names the other's shape
    assert.matches("cuscan: shard_local: x: rank [01] holds a shard of shape 2x[34], this rank %([01]%) one of 2x[34]; " ..
                   "shards may differ only along dim 1", out)
    os.remove(path)
  end)
end)

describe("examples/sharded_scan.lua", function()
  local EX = shell.root .. "/examples/sharded_scan.lua"
  it("passes in one process and under --nproc 2", function()
    local out, status = run(("%s %s 1001 9"):format(q(CUSCAN), q(EX)))
    assert.equal(0, status, out)
    -- over every GPU where there are two or more, else over CPU stand-ins
    local over = "cpu, cpu"
    if H.cs.cuda_available() and H.cs.device_count() >= 2 then
      local names = {}
      for d = 0, H.cs.device_count() - 1 do names[#names + 1] = "cuda:" .. d end
      over = table.concat(names, ", ")
    end
    assert.matches("^PASS sharded cumsum of 1001 x 9 float32 along the sharded dim over " .. over .. ": 8 sampled lines",
                   out)
    out, status = run(("%s --nproc 2 %s 1001 9"):format(q(CUSCAN), q(EX)))
    assert.equal(0, status, out)
    assert.matches("^%[rank 0%] PASS sharded cumsum of 1001 x 9 float32 along the sharded dim over 2 processes", out)
  end)

  it("fails when the scan is wrong", function()
    local patch = "local S = require('cuscan.scan'); local orig = S.scan; " ..
                  "S.scan = function(...) local y, i = orig(...); y:copy(y * 1.01); return y, i end"
    local out, status = run(("%s -e %s %s 500 4"):format(q(CUSCAN), q(patch), q(EX)))
    assert.equal(1, status, out)
    assert.matches("^FAIL", out)
  end)
end)

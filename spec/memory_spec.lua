-- Memory: cs.memory_info(), x:free(), the garbage collector driven by the bytes cuscan holds,
-- out-of-memory errors that name the bytes, and (on a GPU host) the 200 x 4 GiB loop.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local MiB = 1024 * 1024
local GiB = 1024 * MiB

local function settle()
  collectgarbage()
  collectgarbage()
end

H.each_device("memory", function(dev, it)
  it("memory_info gives the bytes in use, free and total", function()
    local m = cs.memory_info(dev)
    assert.equal(dev, m.device)
    assert.is_number(m.in_use)
    assert.is_true(m.in_use >= 0)
    assert.is_true(m.total > 0)
    assert.is_true(m.free >= 0 and m.free <= m.total)
  end)

  it("in_use grows by a new tensor's bytes, not by views, and returns to its start after collectgarbage()", function()
    settle()
    local m0 = cs.memory_info(dev).in_use
    local x = cs.zeros({ 1024, 256 }, { device = dev })
    assert.equal(m0 + MiB, cs.memory_info(dev).in_use)
    local v = x:transpose(1, 2):narrow(1, 2, 10)
    assert.equal(m0 + MiB, cs.memory_info(dev).in_use)
    local y = cs.ones({ 1000 }, { device = dev, dtype = "int64" })
    assert.equal(m0 + MiB + 8000, cs.memory_info(dev).in_use)
    x, v, y = nil, nil, nil
    settle()
    assert.equal(m0, cs.memory_info(dev).in_use)
  end)

  it("free releases the storage at once and makes later use an error", function()
    settle()
    local m0 = cs.memory_info(dev).in_use
    local x = cs.ones({ 256, 1024 }, { device = dev })
    assert.equal(m0 + MiB, cs.memory_info(dev).in_use)
    x:free()
    assert.equal(m0, cs.memory_info(dev).in_use)
    assert.is_true(x:is_freed())
    assert.has_error(function() local _ = x:cumsum(1) end, nil)
    local ok, err = pcall(function() local _ = x:sum() end)
    assert.is_false(ok)
    assert.matches("cuscan: sum: x: tensor was freed", err, 1, true)
    assert.has_no_error(function() x:free() end)  -- twice is harmless
  end)

  it("freeing a tensor leaves the storage its views share alive", function()
    local x = cs.arange(10, { device = dev })
    local v = x:narrow(1, 3, 4)
    x:free()
    assert.same({ 2, 3, 4, 5 }, v:totable())
    assert.same({ 2, 5, 9, 14 }, v:cumsum(1):totable())
  end)

  it("a scan's output is the only new allocation (no temporaries are kept)", function()
    settle()
    local x = cs.rand({ 300, 200 }, { seed = 1, device = dev })
    local m = x:gt(0.5)
    local m0 = cs.memory_info(dev).in_use
    local y = x:cumsum(2, { mask = m, reverse = true })
    assert.equal(m0 + 300 * 200 * 4, cs.memory_info(dev).in_use)
    x:cumprod(1, { out = y })
    assert.equal(m0 + 300 * 200 * 4, cs.memory_info(dev).in_use)
  end)

  it("the collector runs when dropped tensors pile up, so memory stays bounded", function()
    local core = require("cuscan.core")
    settle()
    local runs0 = core.gc_stats().collections
    local m0 = cs.memory_info(dev).in_use
    local each = 16 * MiB
    -- the loop makes twice the current soft limit's headroom in all (at least twice the floor:
    -- 256 MiB on the host, 1 GiB on CUDA), so without collections it would pass the limit
    local floor = dev == "cuda" and 1024 * MiB or 256 * MiB
    local headroom = math.max(core.gc_stats().limit[dev] - m0, floor) + 4 * each
    local n = math.ceil(2 * headroom / (2 * each))
    local worst, max_limit = -math.huge, 0
    -- with the automatic collector stopped, only cuscan's soft limit can free the tensors
    collectgarbage("stop")
    local ok, err = pcall(function()
      for _ = 1, n do
        local x = cs.ones({ each / 4 }, { device = dev })
        local y = x:cumsum(1)
        assert.equal(each / 4, y:numel())
        local now, limit = cs.memory_info(dev).in_use, core.gc_stats().limit[dev]
        if now - limit > worst then worst = now - limit end
        if limit > max_limit then max_limit = limit end
      end
    end)
    collectgarbage("restart")
    assert(ok, err)
    assert.is_true(core.gc_stats().collections > runs0, "the soft limit triggered a collection")
    assert.is_true(worst <= 2 * each, ("in use passed the soft limit by %d MiB"):format(worst / MiB))
    settle()
    assert.equal(m0, cs.memory_info(dev).in_use)
  end)
end)

describe("host blocks kept for reuse", function()
  local n = 3 * MiB  -- 12 MiB of float32: above the 8 MiB where freed host blocks are kept

  it("a new tensor on a reused block holds what its constructor says, not the old values", function()
    local a = cs.full({ n }, 7.5, { device = "cpu" })
    a:free()
    local z = cs.zeros({ n }, { device = "cpu" })
    assert.equal(0, z:sum())
    assert.equal(0, z:abs():max())
    z:free()
    local r = cs.arange(n, { device = "cpu" })
    assert.equal(n - 1, r:max())
    assert.equal(0, r:min())
    r:free()
  end)

  it("kept blocks are not counted in use, and memory_trim gives them back", function()
    settle()
    local m0 = cs.memory_info("cpu").in_use
    local x = cs.rand({ n }, { device = "cpu", seed = 3 })
    assert.equal(m0 + 4 * n, cs.memory_info("cpu").in_use)
    x:free()
    assert.equal(m0, cs.memory_info("cpu").in_use)
    assert.has_no_error(function() cs.memory_trim("cpu") end)
    assert.equal(m0, cs.memory_info("cpu").in_use)
    local y = cs.rand({ n }, { device = "cpu", seed = 3 })  -- a fresh block after the trim
    assert.equal(m0 + 4 * n, cs.memory_info("cpu").in_use)
    assert.is_true(y:min() >= 0 and y:max() < 1)
    y:free()
  end)

  it("memory_trim rejects an unknown device with a cuscan: error", function()
    local ok, err = pcall(cs.memory_trim, "tpu")
    assert.is_false(ok)
    assert.matches("cuscan: memory_trim", err, 1, true)
  end)
end)

describe("out of memory", function()
  it("on the host, asking for more than can be had is a cuscan: error naming the bytes", function()
    local keep = cs.arange(5)
    local ok, err = pcall(function() local _ = cs.zeros({ 2 ^ 50 }, { dtype = "int64", device = "cpu" }) end)
    assert.is_false(ok)
    assert.matches("^spec/memory_spec.lua:%d+: cuscan: zeros: .*out of memory", err)
    assert.matches(("%.0f"):format(2 ^ 53), err, 1, true)
    assert.same({ 0, 1, 2, 3, 4 }, keep:totable())
  end)

  local cuda_it = H.cuda_it()

  cuda_it("on CUDA, a tensor larger than the device is a cuscan: error naming the bytes asked and free; the rest lives on #cuda", function()
    -- in a child process: a failed request can leave the device's memory pool holding what it
    -- grabbed while trying, which would starve later processes
    local out, status = H.run_lua([[
      local cs = require("cuscan")
      local keep = cs.rand({ 1000 }, { seed = 3, device = "cuda" })
      local before = keep:totable()
      local n = math.floor(cs.device_info().total_memory / 4) * 2
      local ok, err = pcall(function() local _ = cs.zeros({ n }, { device = "cuda" }) end)
      local after = keep:totable()
      local same = #after == #before
      for i = 1, #before do same = same and before[i] == after[i] end
      local sum = keep:cumsum(1):totable()
      io.write(tostring(ok), "\n", tostring(err), "\n", ("%.0f"):format(n * 4), "\n", tostring(same), "\n",
               ("%.6g %.6g"):format(sum[1000], keep:sum()), "\n")
    ]])
    assert.equal(0, status, out)
    local ok, err, asked, same, sums = out:match("^(%S+)\n(.-)\n(%d+)\n(%S+)\n(.-)\n$")
    assert.equal("false", ok, out)
    assert.matches("cuscan: zeros: .*out of memory", err)
    assert.matches(asked, err, 1, true)
    assert.matches("free", err, 1, true)
    assert.equal("true", same)
    local a, b = sums:match("^(%S+) (%S+)$")
    assert.near(tonumber(b), tonumber(a), 1e-2)
  end)

  cuda_it("on CUDA, garbage is collected before an allocation that needs its memory fails #cuda", function()
    -- in a child process, so that the device memory its pool keeps goes back when it exits
    local out, status = H.run_lua([[
      local cs = require("cuscan")
      local total = cs.device_info().total_memory
      local chunk = math.floor(total * 0.3 / 4)
      for _ = 1, 4 do
        local g = cs.zeros({ chunk }, { device = "cuda" })  -- dropped at once: garbage
        assert(g:numel() == chunk)
      end
      local big = cs.zeros({ chunk * 2 }, { device = "cuda" })
      big:fill(1)
      io.write("made ", big:numel(), " ", big:narrow(1, chunk * 2, 1):item())
    ]])
    assert.equal(0, status, out)
    assert.matches("^made %d+ 1$", out)
  end)

  cuda_it("on CUDA, 200 outputs of 4 GiB from a 4 GiB input finish and memory returns to its start #cuda #slow", function()
    settle()
    local m0 = cs.memory_info("cuda").in_use
    local n = 4 * GiB / 4
    local x = cs.rand({ n }, { seed = 11, device = "cuda" })
    local last
    for i = 1, 200 do
      local y = x:cumsum(1)
      if i == 200 then last = y:narrow(1, n - 3, 4):cpu() end
    end
    cs.synchronize()
    assert.equal(4, last:numel())
    x = nil
    settle()
    cs.synchronize()
    assert.equal(m0, cs.memory_info("cuda").in_use)
  end)
end)

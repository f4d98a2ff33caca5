-- GPUs by index: device names ("cpu", "cuda", "cuda:N") wherever a device is named, their errors,
-- and with GPUs: "cuda:0" as "cuda", creation, copies and scans on a second GPU, mixed-GPU operands
-- refused, events and memory per GPU. The name checks run everywhere; the rest where the GPUs are.
local H = require("spec.helpers")
local cs = H.cs

local NGPU = cs.device_count()

local BAD_NAMES = { "cuda:-1", "gpu", "cuda:", "cuda:1x", "cuda: 1", "CUDA", "cuda:0:1", " cuda" }

describe("device names", function()
  it("a name that is not \"cpu\", \"cuda\" or \"cuda:N\" is an error naming the argument everywhere a device is named", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = "cpu" })
    local before = cs.default_device()
    for _, bad in ipairs(BAD_NAMES) do
      local q = ("%q"):format(bad)
      H.raises(function() local _ = cs.zeros({ 2 }, { device = bad }) end, { "zeros: device: expected \"cpu\" or \"cuda\"", q, "cuda:N" })
      -- x:to takes a name that does not look like a device for a dtype name
      if bad:match("^cuda") or bad:match("^gpu") then
        H.raises(function() local _ = x:to(bad) end, { "to: device: expected", q })
      end
      H.raises(function() local _ = x:to({ device = bad }) end, { "to: device: expected", q })
      H.raises(function() cs.set_default_device(bad) end, { "set_default_device: device: expected", q })
      H.raises(function() local _ = cs.memory_info(bad) end, { "memory_info: device: expected", q })
      H.raises(function() cs.memory_trim(bad) end, { "memory_trim: device: expected", q })
      H.raises(function() local _ = cs.event(bad) end, { "event: device: expected", q })
      H.raises(function() local _ = cs.device_info(bad) end, { "device_info: device: expected", q })
      H.raises(function() cs.synchronize(bad) end, { "synchronize: device: expected", q })
    end
    H.raises(function() local _ = cs.zeros({ 2 }, { device = 0 }) end, { "zeros: device: expected", "number 0" })
    assert.equal(before, cs.default_device())
    assert.same({ 1, 2, 3 }, x:totable())
  end)

  it("CUSCAN_DEVICE with a bad name fails at load, naming the variable", function()
    for _, bad in ipairs({ "cuda:-1", "gpu", "cuda:1x" }) do
      local out, status = H.run_lua("require('cuscan')", { CUSCAN_DEVICE = bad })
      assert.is_not.equal(0, status)
      assert.is_truthy(out:find("cuscan: CUSCAN_DEVICE: environment variable: expected \"cpu\" or \"cuda\"", 1, true), out)
    end
  end)

  it("x:cuda(index) takes a whole number >= 0", function()
    local x = cs.tensor({ 1, 2 }, { device = "cpu" })
    for _, bad in ipairs({ -1, 1.5, "1", true, {} }) do
      H.raises(function() local _ = x:cuda(bad) end, { "cuda: index: expected a GPU index" })
    end
  end)

  it("a CPU tensor reports device \"cpu\", device_type \"cpu\" and no device_index", function()
    local x = cs.rand({ 3 }, { device = "cpu", seed = H.seed_for("cpu fields") })
    assert.equal("cpu", x.device)
    assert.equal("cpu", x.device_type)
    assert.is_nil(x.device_index)
    assert.is_truthy(tostring(x):find(", cpu]", 1, true))
  end)

  it("device_info of the CPU is an error", function()
    H.raises(function() local _ = cs.device_info("cpu") end, { "device_info: device: expected a GPU" })
  end)
end)

describe("device names without a GPU", function()
  local it_nogpu = H.it_unless(NGPU > 0 and "this machine has a GPU" or nil)

  it_nogpu("\"cuda:0\" and \"cuda:99\" give the usual CUDA-not-available error; device_count is 0", function()
    local reason = cs.cuda_unavailable_reason()
    assert.equal(0, cs.device_count())
    assert.is_nil(cs.default_gpu())
    for _, name in ipairs({ "cuda:0", "cuda:99" }) do
      H.raises(function() local _ = cs.zeros({ 2 }, { device = name }) end, { "zeros: device: CUDA is not available", reason })
      H.raises(function() cs.set_default_device(name) end, { "CUDA is not available", reason })
      H.raises(function() local _ = cs.memory_info(name) end, { "CUDA is not available" })
      H.raises(function() local _ = cs.event(name) end, { "CUDA is not available" })
    end
    H.raises(function() local _ = cs.ones({ 2 }, { device = "cpu" }):cuda(0) end, { "cuda: index: CUDA is not available" })
    assert.equal("cpu", cs.default_device())
  end)
end)

describe("one GPU #cuda", function()
  local it1 = H.gpus_it(1)

  it1("\"cuda:0\" is \"cuda\" while GPU 0 is the default GPU", function()
    local seed = H.seed_for("cuda:0 is cuda")
    local a = cs.rand({ 5, 7 }, { device = "cuda:0", seed = seed })
    local b = cs.rand({ 5, 7 }, { device = "cuda", seed = seed })
    assert.equal(0, cs.default_gpu())
    assert.equal("cuda", a.device)
    assert.equal("cuda", a.device_type)
    assert.equal(0, a.device_index)
    assert.is_truthy(tostring(a):find(", cuda:0]", 1, true))
    assert.tensor_equal(b:cpu(), a:cpu())
    assert.equal(a.device_index, cs.zeros({ 2 }, { device = a.device }).device_index)
    assert.equal(0, a:to("cpu"):cuda(0).device_index)
  end)

  it1("a GPU index beyond the GPUs there are is refused, naming how many there are", function()
    local n = cs.device_count()
    local name = "cuda:" .. n
    local count = ("this machine has %d GPU"):format(n)
    H.raises(function() local _ = cs.zeros({ 2 }, { device = name }) end, { "zeros: device: " .. name .. " does not exist", count })
    H.raises(function() local _ = cs.zeros({ 2 }, { device = "cpu" }):to(name) end, { "to: device:", count })
    H.raises(function() local _ = cs.zeros({ 2 }, { device = "cpu" }):cuda(99) end, { "cuda: index: cuda:99 does not exist", count })
    H.raises(function() cs.set_default_device("cuda:99") end, { "set_default_device: device: cuda:99", count })
    H.raises(function() local _ = cs.memory_info("cuda:99") end, { "memory_info: device: cuda:99", count })
  end)
end)

-- Plain-Lua oracle values of a random float32-exact table.
local function random_values(rng, n)
  local t = {}
  for i = 1, n do t[i] = H.f32((rng:next() % 2001 - 1000) / 256) end
  return t
end

describe("two GPUs #cuda #multigpu", function()
  local it2 = H.gpus_it(2)

  it2("tensors are made on the GPU named, report it, and print it", function()
    local seed = H.seed_for("made on each")
    local want = cs.rand({ 33, 5 }, { device = "cpu", seed = seed })
    for g = 0, NGPU - 1 do
      local x = cs.rand({ 33, 5 }, { device = "cuda:" .. g, seed = seed })
      assert.equal(g, x.device_index)
      assert.equal("cuda", x.device_type)
      assert.equal(g == cs.default_gpu() and "cuda" or "cuda:" .. g, x.device)
      assert.is_truthy(tostring(x):find((", cuda:%d]"):format(g), 1, true))
      assert.tensor_equal(want, x:cpu())
      -- x.device names a device next to x
      assert.equal(g, cs.zeros({ 2 }, { device = x.device }).device_index)
    end
  end)

  it2("x:to and x:copy between GPUs both ways keep every value (contiguous, strided, converted)", function()
    H.with_rng("to across GPUs", function(rng)
      local vals = random_values(rng, 6 * 50)
      local src = cs.tensor(vals, { device = "cpu" }):reshape({ 6, 50 })
      for _, pair in ipairs({ { 0, 1 }, { 1, 0 } }) do
        local from, to = "cuda:" .. pair[1], "cuda:" .. pair[2]
        local x = src:to(from)
        local y = x:to(to)
        assert.equal(pair[2], y.device_index)
        assert.tensor_equal(src, y:cpu())
        assert.equal(pair[2], x:cuda(pair[2]).device_index)
        -- a strided view, converted on the way
        local yt = x:transpose(1, 2):to({ device = to, dtype = "float64" })
        assert.equal(pair[2], yt.device_index)
        assert.tensor_equal(src:transpose(1, 2):to("float64"), yt:cpu())
        -- into a poisoned tensor on the other GPU
        local out = cs.full({ 6, 50 }, 0 / 0, { device = to })
        out:copy(x)
        assert.tensor_equal(src, out:cpu())
        -- the source is untouched
        assert.tensor_equal(src, x:cpu())
      end
    end)
  end)

  it2("operands on different GPUs are an error naming both devices; nothing changes", function()
    local x0 = cs.rand({ 4, 6 }, { device = "cuda:0", seed = H.seed_for("mixed x") })
    local m1 = cs.rand({ 4, 6 }, { device = "cuda:1", seed = H.seed_for("mixed m") }):lt(0.5)
    local y1 = cs.rand({ 4, 6 }, { device = "cuda:1", seed = H.seed_for("mixed y") })
    local out1 = cs.full({ 4, 6 }, 7, { device = "cuda:1" })
    local x_before = x0:cpu()
    H.raises(function() local _ = cs.cumsum(x0, 2, { mask = m1 }) end, { "cumsum: mask:", "mask is on cuda:1, x on cuda:0" })
    H.raises(function() cs.cumsum(x0, 2, { out = out1 }) end, { "cumsum: out:", "cuda:1", "cuda:0" })
    H.raises(function() local _ = x0 + y1 end, { "add: tensors are on different devices", "cuda:0", "cuda:1" })
    H.raises(function() local _ = cs.where(m1, x0, y1) end, { "where:", "cuda:1", "cuda:0" })
    assert.tensor_equal(x_before, x0:cpu())
    assert.tensor_equal(cs.full({ 4, 6 }, 7), out1:cpu())
  end)

  it2("scans on GPU 1 match the plain-Lua oracle, with GPU 0 the default", function()
    H.with_rng("scans on gpu 1", function(rng)
      local rows, cols = 9, 301
      local vals = random_values(rng, rows * cols)
      local mask = H.random_mask(rng, { rows, cols }, 0.6)
      local nested = H.unflatten(vals, { rows, cols })
      local x = cs.tensor(nested, { device = "cuda:1" })
      local m = cs.tensor(mask, { device = "cuda:1" })
      for _, dim in ipairs({ 1, 2 }) do
        for _, opts in ipairs({ {}, { reverse = true }, { exclusive = true, mask = true } }) do
          local want = H.scan_ref(nested, dim, { mask = opts.mask and mask or nil, reverse = opts.reverse,
                                                 exclusive = opts.exclusive, dtype = "float32" })
          local got = cs.cumsum(x, dim, { mask = opts.mask and m or nil, reverse = opts.reverse,
                                          exclusive = opts.exclusive })
          assert.equal(1, got.device_index)
          H.assert_result(want, got:cpu(), "float32", "sum", dim == 1 and rows or cols)
        end
      end
      -- another GPU's scan leaves GPU 1's input as it was
      assert.tensor_equal(cs.tensor(nested), x:cpu())
    end)
  end)

  it2("events time one GPU's queue; events of two GPUs do not mix", function()
    local e0, e1 = cs.event("cuda:1"), cs.event("cuda:1")
    local x = cs.rand({ 1048576 }, { device = "cuda:1", seed = 3 })
    e0:record()
    local _ = cs.cumsum(x, 1)
    e1:record()
    assert.is_true(e0:elapsed(e1) >= 0)
    local f = cs.event("cuda:0"):record()
    H.raises(function() local _ = e0:elapsed(f) end, { "events of different devices", "cuda:1", "cuda:0" })
  end)

  it2("memory_info counts each GPU's tensors on that GPU alone", function()
    collectgarbage("collect")
    local a0, a1 = cs.memory_info("cuda:0").in_use, cs.memory_info("cuda:1").in_use
    local x = cs.zeros({ 1048576 }, { device = "cuda:1" })
    assert.equal(a1 + 4 * (1048576), cs.memory_info("cuda:1").in_use)
    assert.equal(a0, cs.memory_info("cuda:0").in_use)
    assert.equal("cuda:1", cs.memory_info("cuda:1").device)
    x:free()
    assert.equal(a1, cs.memory_info("cuda:1").in_use)
    assert.equal(1, cs.device_info("cuda:1").index)
    cs.synchronize("cuda:1")
  end)

  describe("with GPU 1 the default GPU", function()
    H.default_device_each("cuda:1")

    it2("\"cuda\" names GPU 1, and x.device is \"cuda\" there and \"cuda:0\" on GPU 0", function()
      assert.equal(1, cs.default_gpu())
      assert.equal("cuda", cs.default_device())
      local x = cs.ones({ 3 })
      assert.equal(1, x.device_index)
      assert.equal("cuda", x.device)
      local z = cs.ones({ 3 }, { device = "cuda:0" })
      assert.equal("cuda:0", z.device)
      assert.equal(1, z:cuda().device_index)
      assert.same({ 1, 1, 1 }, z:cuda():totable())
    end)
  end)
end)

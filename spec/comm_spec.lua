-- Communicators (NCCL): argument checks and the NCCL-missing errors run everywhere; communicators
-- and the all-gather where there are GPUs and libnccl.so.2.
local H = require("spec.helpers")
local cs = H.cs
local ffi = require("ffi")

local NGPU = cs.device_count()

describe("communicators: argument checks", function()
  it("comm_init_all takes a non-empty list of distinct GPUs", function()
    H.raises(function() local _ = cs.comm_init_all() end, { "comm_init_all: devices: expected a list of GPUs", "nil" })
    H.raises(function() local _ = cs.comm_init_all({}) end, { "comm_init_all: devices: expected a list of GPUs" })
    H.raises(function() local _ = cs.comm_init_all("cuda:0") end, { "comm_init_all: devices: expected a list" })
    H.raises(function() local _ = cs.comm_init_all({ "cpu" }) end, { "comm_init_all: devices[1]: expected a GPU", "\"cpu\"" })
    H.raises(function() local _ = cs.comm_init_all({ "cuda:0", "gpu" }) end, { "comm_init_all: devices[2]: expected \"cpu\" or \"cuda\"", "\"gpu\"" })
    H.raises(function() local _ = cs.comm_init_all({ "cuda:-1" }) end, { "comm_init_all: devices[1]: expected" })
    H.raises(function() local _ = cs.comm_init_all({ -1 }) end, { "comm_init_all: devices[1]: expected a GPU name or index", "-1" })
    H.raises(function() local _ = cs.comm_init_all({ 0.5 }) end, { "comm_init_all: devices[1]: expected a GPU name or index" })
    H.raises(function() local _ = cs.comm_init_all({ "cuda:0", 0 }) end, { "comm_init_all: devices[2]: cuda:0 is named twice" })
  end)

  it("comm_init_rank checks the id, nranks, rank and device", function()
    local id = string.rep("\0", 128)
    H.raises(function() local _ = cs.comm_init_rank(nil, 2, 0, 0) end, { "comm_init_rank: id: expected the 128-byte string" })
    H.raises(function() local _ = cs.comm_init_rank("abc", 2, 0, 0) end, { "comm_init_rank: id:", "a string of 3 bytes" })
    H.raises(function() local _ = cs.comm_init_rank(id, 0, 0, 0) end, { "comm_init_rank: nranks: expected a whole number >= 1" })
    H.raises(function() local _ = cs.comm_init_rank(id, 1.5, 0, 0) end, { "comm_init_rank: nranks:" })
    H.raises(function() local _ = cs.comm_init_rank(id, 2, 2, 0) end, { "comm_init_rank: rank: expected a whole number from 0 to nranks - 1 (1)" })
    H.raises(function() local _ = cs.comm_init_rank(id, 2, -1, 0) end, { "comm_init_rank: rank:" })
    H.raises(function() local _ = cs.comm_init_rank(id, 2, 0, "cpu") end, { "comm_init_rank: device: expected a GPU" })
    H.raises(function() local _ = cs.comm_init_rank(id, 2, 0, "cuda:1x") end, { "comm_init_rank: device: expected" })
  end)

  it("comm_group takes a function; methods refuse what is not a communicator", function()
    H.raises(function() cs.comm_group(nil) end, { "comm_group: fn: expected a function, got nil" })
    H.raises(function() cs.comm_group({}) end, { "comm_group: fn: expected a function" })
    local forged = ffi.cast("cs_comm *", nil)
    H.raises(function() local _ = forged:rank() end, { "rank: c: expected a communicator" })
    H.raises(function() local _ = forged:all_gather(cs.zeros({ 2 }), cs.zeros({ 1 })) end, { "all_gather: c: expected a communicator" })
  end)
end)

describe("communicators without a GPU", function()
  local it_nogpu = NGPU == 0 and it or function(name) pending(name .. " (skipped: this machine has a GPU)") end

  it_nogpu("every call that would use NCCL says it is not available, and why", function()
    local reason = cs.cuda_unavailable_reason()
    H.raises(function() local _ = cs.comm_unique_id() end, { "comm_unique_id: NCCL is not available", reason })
    H.raises(function() local _ = cs.comm_init_all({ "cuda:0", "cuda:1" }) end, { "comm_init_all: NCCL is not available", reason })
    H.raises(function() local _ = cs.comm_init_rank(string.rep("x", 128), 2, 1, "cuda:0") end, { "comm_init_rank: NCCL is not available" })
    local ran = false
    H.raises(function() cs.comm_group(function() ran = true end) end, { "comm_group: NCCL is not available" })
    assert.is_false(ran)
  end)
end)

-- With GPUs: NCCL may still be missing; then the tests say so.
local function nccl_reason()
  if NGPU == 0 then return cs.cuda_unavailable_reason() end
  local ok, err = pcall(cs.comm_unique_id)
  return not ok and tostring(err) or nil
end

local function it_nccl(ngpus)
  local env = getfenv(2)
  local why = NGPU < ngpus and ("needs " .. ngpus .. " GPUs, this machine has " .. NGPU) or nccl_reason()
  if not why then return env.it end
  return function(name) env.pending(name .. " (skipped: " .. why .. ")") end
end

describe("communicators on GPUs #cuda", function()
  local it1, it2 = it_nccl(1), it_nccl(2)

  it1("a unique id is 128 bytes and differs from call to call", function()
    local a, b = cs.comm_unique_id(), cs.comm_unique_id()
    assert.equal(128, #a)
    assert.is_not.equal(a, b)
  end)

  it1("a communicator of one rank gathers its own send", function()
    local c = cs.comm_init_rank(cs.comm_unique_id(), 1, 0, "cuda:0")
    assert.equal(0, c:rank())
    assert.equal(1, c:size())
    assert.equal("cuda:0", c:device())
    local send = cs.rand({ 7 }, { device = "cuda:0", seed = H.seed_for("gather one") })
    local recv = cs.full({ 7 }, 0 / 0, { device = "cuda:0" })
    c:all_gather(recv, send)
    assert.tensor_equal(send:cpu(), recv:cpu())
    H.raises(function() c:all_gather(cs.zeros({ 6 }, { device = "cuda:0" }), send) end, { "all_gather: recv: expected 7 elements" })
    H.raises(function() c:all_gather(cs.zeros({ 7 }, { device = "cuda:0", dtype = "float64" }), send) end, { "all_gather: recv: expected send's dtype" })
    H.raises(function() c:all_gather(recv, send:cpu()) end, { "all_gather: send: expected a tensor on the communicator's GPU cuda:0" })
  end)

  it2("communicators over every GPU gather each rank's send in rank order (#multigpu)", function()
    local devices = {}
    for g = 0, NGPU - 1 do devices[#devices + 1] = "cuda:" .. g end
    local comms = cs.comm_init_all(devices)
    assert.equal(NGPU, #comms)
    local n = 1001
    local sends, recvs, want = {}, {}, {}
    for k, c in ipairs(comms) do
      assert.equal(k - 1, c:rank())
      assert.equal(NGPU, c:size())
      sends[k] = cs.rand({ n }, { device = devices[k], seed = H.seed_for("gather " .. k) })
      recvs[k] = cs.full({ NGPU * n }, 0 / 0, { device = devices[k] })
      want[k] = sends[k]:cpu()
    end
    cs.comm_group(function()
      for k, c in ipairs(comms) do c:all_gather(recvs[k], sends[k]) end
    end)
    local expected = cs.cat(want, 1)
    for k = 1, NGPU do assert.tensor_equal(expected, recvs[k]:cpu()) end
  end)
end)

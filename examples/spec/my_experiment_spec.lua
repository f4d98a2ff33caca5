-- An example of verifying an experiment with busted and cuscan's assertions.
--
--   busted examples/spec                       (from the project root; .busted sets everything up)
--   busted --exclude-tags=cuda examples/spec   (on a machine without a CUDA device)
--
-- Write specs like these for your own experiments: compute a result with cuscan, then compare it
-- with something you trust (a small loop written from the definition, or known values) using
-- assert.tensor_near / assert.tensor_equal / assert.same_shape.
local cs = require("cuscan")
require("cuscan.assertions")

-- The experiment: discounted returns G_t = r_t + gamma * G_{t+1}, computed with a reverse scan of
-- r_t * gamma^t (and divided by gamma^t afterwards).
local function discounted_returns(rewards, gamma)
  local n = rewards:size(-1)
  local powers = cs.full({ n }, gamma, { dtype = "float64", device = rewards.device })
      :cumprod(1, { exclusive = true })                     -- 1, gamma, gamma^2, ...
  local scaled = rewards:to("float64") * powers
  return scaled:reverse_cumsum(-1) / powers
end

-- The trusted reference: the plain loop from the definition.
local function reference(rewards, gamma)
  local r = rewards:totable()
  local g, acc = {}, 0
  for t = #r, 1, -1 do
    acc = r[t] + gamma * acc
    g[t] = acc
  end
  return g
end

describe("my experiment: discounted returns", function()
  it("match the plain loop on the CPU", function()
    local rewards = cs.rand({ 50 }, { seed = 1, device = "cpu" })
    assert.tensor_near(reference(rewards, 0.9), discounted_returns(rewards, 0.9), 1e-9)
  end)

  it("keep the shape of the rewards", function()
    local rewards = cs.rand({ 4, 50 }, { seed = 2, device = "cpu" })
    assert.same_shape(rewards, discounted_returns(rewards, 0.9))
  end)

  it("give the values worked out by hand for gamma = 0.5", function()
    local rewards = cs.tensor({ 1, 2, 3, 4 }, { dtype = "float64", device = "cpu" })
    -- G4 = 4, G3 = 3 + 4/2 = 5, G2 = 2 + 5/2 = 4.5, G1 = 1 + 4.5/2 = 3.25 (all exact in binary)
    assert.tensor_equal({ 3.25, 4.5, 5, 4 }, discounted_returns(rewards, 0.5))
  end)

  -- Tagged #cuda: `busted --exclude-tags=cuda` leaves it out on a machine without a device; here
  -- it also reports itself as pending (skipped) when no device is present.
  it("agree between CPU and CUDA #cuda", function()
    if not cs.cuda_available() then
      pending("skipped: " .. cs.cuda_unavailable_reason())
      return
    end
    local rewards = cs.rand({ 8, 1000 }, { seed = 3, device = "cuda" })
    local on_gpu = discounted_returns(rewards, 0.99)
    local on_cpu = discounted_returns(rewards:cpu(), 0.99)
    assert.tensor_near(on_cpu, on_gpu, 1e-6, 1e-9)
  end)
end)

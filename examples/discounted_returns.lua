-- Discounted returns for reinforcement learning, G_t = r_t + gamma * G_{t+1}, over a batch of
-- episodes with an episode-end mask, computed with reverse and masked scans and checked against
-- the plain loop.
--
--   bin/cuscan examples/discounted_returns.lua [--episodes B] [--steps T] [--gamma g]
--                                              [--dtype float64|float32] [--seed s]
--
-- The batch: row b holds episode b's rewards r[b][t] for t = 1..T; done[b][t] is true at the
-- episode's last step, and the steps after it are padding holding garbage (here +-Inf and NaN, as
-- a buffer of whatever was there before). An episode without a done step runs to T.
--
-- The trick. Unrolling the recursion, with e the episode's last step and G = 0 after it,
--
--     G_t = r_t + gamma r_{t+1} + ... + gamma^(e-t) r_e = sum_{k=t..e} gamma^(k-t) r_k
--         = gamma^(-t) * sum_{k=t..e} gamma^k r_k.
--
-- The sum is a reverse cumulative sum of a_k = gamma^k r_k, taken over the episode's steps only.
-- Those are the steps with no episode end strictly before them, which an exclusive cumsum of done
-- finds: valid = done:cumsum(2, {exclusive = true}):eq(0). A reverse cumsum masked by valid then
-- gives the sum for every t at once, and the padding contributes 0 whatever it holds (a masked-out
-- element contributes the identity; cumsum(a * valid) would turn Inf * 0 into NaN). So
--
--     G = (r * gamma^k):cumsum(2, {reverse = true, mask = valid}) / gamma^k        (one pass each)
--
-- Float range. gamma^k shrinks geometrically: for gamma = 0.99, gamma^k is below float32's
-- smallest normal number after about 8,700 steps and below float64's after about 70,000, and
-- gamma^(-k) overflows at the same points. So the time axis is cut into blocks of at most
-- L steps with L * |ln gamma| <= 600 for float64 (40 for float32), and the powers restart at
-- each block's first step: within a block they stay in [e^-600, 1]. Blocks are done from the last
-- to the first; what lies beyond a block enters through G at the next block's first step, c
-- (0 when the episode ended before it, since masked padding gives G = 0 there):
--
--     G_t = gamma^(-k) * sum_{j=k..len-1, valid} gamma^j r_j  +  gamma^(len-k) * c,
--
-- with k the step's index within the block (0-based) and len the block's length. For gamma = 0.99
-- a float64 block is 59,700 steps, so usual rollouts are a single block; small gammas or float32
-- use several, and the check below covers them.
local cs = require("cuscan")

local opts = { steps = 1000, gamma = 0.99, dtype = "float64", seed = 1 }
do
  local known = { episodes = true, steps = true, gamma = true, dtype = true, seed = true }
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    if not known[key] or arg[i + 1] == nil then
      io.stderr:write("usage: discounted_returns.lua [--episodes B] [--steps T] [--gamma g] " ..
                      "[--dtype float64|float32] [--seed s]\n")
      os.exit(2)
    end
    local v = arg[i + 1]
    opts[key] = (key == "dtype") and v or tonumber(v)
    i = i + 2
  end
end
local device = cs.default_device()
local B = opts.episodes or (device == "cuda" and 8192 or 256)
local T, gamma, dtype = opts.steps, opts.gamma, opts.dtype
assert(gamma > 0 and gamma < 1, "--gamma must be in (0, 1)")
assert(dtype == "float64" or dtype == "float32", "--dtype must be float64 or float32")

-- The returns of a batch: rewards {B, T}, done {B, T} (bool), discount gamma.
local function discounted_returns(rewards, done, g)
  local T_ = rewards:size(2)
  local dt = rewards.dtype
  local valid = done:cumsum(2, { exclusive = true }):eq(0)       -- no episode end before this step
  local log_g = math.log(g)
  local block = math.max(1, math.floor((dt == "float64" and 600 or 40) / -log_g))
  local G = cs.zeros(rewards:shape(), { dtype = dt, device = rewards.device })
  local carry = nil                                               -- G at the next block's first step
  local last_start = T_ - (T_ - 1) % block                        -- blocks: 1, 1+block, ..., last_start
  for s = last_start, 1, -block do
    local len = math.min(block, T_ - s + 1)
    local k = cs.arange(len, { dtype = dt, device = rewards.device }):reshape({ 1, len })
    local w = (k * log_g):exp()                                   -- gamma^k, k = 0..len-1
    local a = rewards:narrow(2, s, len) * w
    local Gb = a:cumsum(2, { reverse = true, mask = valid:narrow(2, s, len) }) / w
    if carry then
      Gb = Gb + ((len - k) * log_g):exp() * carry                 -- gamma^(len-k) * c, broadcast over rows
    end
    G:narrow(2, s, len):copy(Gb)
    carry = Gb:narrow(2, 1, 1)
  end
  return G, block
end

-- The inputs. Episode b lasts len_b steps, from 1 to 5T/4: those longer than T have no end in the
-- window. Rewards are uniform in [-1, 1); past the end the row holds r / 0 (+-Inf, NaN at 0).
local r = cs.rand({ B, T }, { seed = opts.seed, dtype = dtype }) * 2 - 1
local lengths = (cs.rand({ B, 1 }, { seed = opts.seed + 1 }) * (T * 5 / 4)):to("int32") + 1
local t_index = cs.arange(T, { dtype = "int32" }):reshape({ 1, T })
local done = t_index:eq(lengths - 1)                              -- true at each episode's last step
local garbage = r / t_index:lt(lengths):to(dtype)                 -- r where valid, +-Inf/NaN after

-- Time it (device time on CUDA), then compute once more for the check.
local e0, e1 = cs.event(), cs.event()
local G, block = discounted_returns(garbage, done, gamma)         -- warm-up
local times = {}
for i = 1, 3 do
  e0:record()
  G = discounted_returns(garbage, done, gamma)
  e1:record()
  times[i] = e0:elapsed(e1)
end
table.sort(times)
local nblocks = math.ceil(T / block)

print(string.format("discounted returns: %d episodes x %d steps, gamma %g, %s on %s", B, T, gamma, dtype, device))
print(string.format("  %d block%s of at most %d steps; median time %.3f ms", nblocks, nblocks == 1 and "" or "s", block,
                    times[2]))

-- The reference: the plain loop G_t = r_t + gamma G_{t+1} from each episode's last step, in
-- double precision, on the rewards as stored (without the padding).
local check_rows = {}
if B * T <= 2000000 then
  for b = 1, B do check_rows[b] = b end
else
  for i = 1, 64 do check_rows[i] = 1 + math.floor((i - 1) * (B - 1) / 63) end
end
local tol = dtype == "float64" and 1e-9 or 1e-4
local worst, nonfinite = 0, 0
local shown = 0
print("  episode  length   G_1 (scans)   G_1 (loop)")
for _, b in ipairs(check_rows) do
  local rb = r:select(1, b):totable()
  local len = math.min(lengths:select(1, b):item(), T)
  local got = G:select(1, b):totable()
  local acc = 0
  local ref = {}
  for t = T, 1, -1 do
    if t > len then ref[t] = 0 else acc = rb[t] + gamma * acc; ref[t] = acc end
  end
  for t = 1, T do
    local g = got[t]
    if g ~= g or g == math.huge or g == -math.huge then nonfinite = nonfinite + 1 end
    -- relative to the size of the discounted sum, so that returns near 0 are judged fairly
    local err = math.abs(g - ref[t]) / (1 + math.abs(ref[t]))
    if err ~= err then err = math.huge end
    if err > worst then worst = err end
  end
  if shown < 4 then
    shown = shown + 1
    print(string.format("  %7d  %6d  %12.6f  %12.6f", b, len, got[1], ref[1]))
  end
end
local ok = worst <= tol and nonfinite == 0
print(string.format("check against the plain loop on %d episodes: max error %.2e (tolerance %.0e), %d non-finite: %s",
                    #check_rows, worst, tol, nonfinite, ok and "PASS" or "FAIL"))
os.exit(ok and 0 or 1)

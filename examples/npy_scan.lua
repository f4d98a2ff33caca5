-- Cumulative log returns from a .npy file: load, scan, save, read back.
--
--   bin/cuscan examples/npy_scan.lua [--in prices.npy] [--out path.npy] [--mmap 1] [--days D] [--assets A] [--seed s]
--
-- The input is a days x assets array of prices (any float or integer dtype NumPy writes: np.save
-- from Python, or cs.save). Without --in the script writes one first: a random walk of D days for
-- A assets, saved beside --out as prices.npy. It then
--   1. loads the prices (with --mmap 1 as a memory map, read from the file as the scan touches it);
--   2. takes daily log returns log(p[t] / p[t-1]) and their cumulative sum along dim 1 (days),
--      in float64, so that row t holds each asset's log return from day 1 to day t;
--   3. saves the result to --out (default: cumulative_returns.npy in the current directory);
--   4. reads the saved file back and checks it holds the very bits that were saved, and checks the
--      scan on a sample of assets against a plain Lua loop over the prices read with totable().
-- It prints PASS or FAIL and exits with status 1 when a check fails. NumPy reads the output:
--   python3 -c "import numpy; print(numpy.load('cumulative_returns.npy')[-1])"
local cs = require("cuscan")

local opts = { out = "cumulative_returns.npy", seed = 11 }
do
  local known = { ["in"] = "string", out = "string", mmap = "number", days = "number", assets = "number",
                  seed = "number" }
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    local v = arg[i + 1]
    if not known[key] or v == nil or (known[key] == "number" and tonumber(v) == nil) then
      io.stderr:write("usage: npy_scan.lua [--in prices.npy] [--out path.npy] [--mmap 1] [--days D] [--assets A] [--seed s]\n")
      os.exit(2)
    end
    opts[key] = known[key] == "number" and tonumber(v) or v
    i = i + 2
  end
end

-- No input given: a random walk of prices, written as NumPy would write it.
local input = opts["in"]
if not input then
  local days, assets = opts.days or 2000, opts.assets or 64
  input = (opts.out:match("^(.*)/[^/]*$") or ".") .. "/prices.npy"
  local steps = cs.randn({ days, assets }, { seed = opts.seed, dtype = "float64", device = "cpu" }) * 0.01
  local prices = (steps:cumsum(1) + 4.6):exp()   -- log prices start near log(100)
  cs.save(input, prices)
  print(("wrote %s: %d days x %d assets of prices"):format(input, days, assets))
end

-- 1. load
local prices = cs.load(input, { mmap = opts.mmap == 1 or nil, device = opts.mmap == 1 and "cpu" or nil })
assert(prices:dim() == 2, "expected a days x assets array")
local days, assets = prices:size(1), prices:size(2)
print(("loaded %s: %s %dx%d on %s%s"):format(input, prices.dtype, days, assets, prices.device,
                                            opts.mmap == 1 and " (memory map)" or ""))

-- 2. scan: log returns from day 2 on, day 1's return is 0; then their running sum along the days
local p = prices:to("float64")
if opts.mmap == 1 and cs.default_device() == "cuda" then p = p:cuda() end
local logs = p:log()
local returns = cs.cat({ cs.zeros({ 1, assets }, { dtype = "float64", device = p.device }),
                         logs:narrow(1, 2, days - 1) - logs:narrow(1, 1, days - 1) }, 1)
local cumulative = returns:cumsum(1)

-- 3. save, 4. read back
cs.save(opts.out, cumulative)
local back = cs.load(opts.out, { device = "cpu" })
local host = cumulative:cpu()
-- every element equal (a NaN, unequal to itself, would count as a difference)
local same_bits = back.dtype == host.dtype and back:numel() == host:numel() and back:ne(host):sum() == 0
print(("saved %s and read it back: %s"):format(opts.out, same_bits and "the same float64 values" or "DIFFERENT values"))

-- The check: a plain loop over sampled assets, from the prices themselves.
local all = prices:totable()
local worst = 0
local step = math.max(1, math.floor(assets / 16))
local result = back:totable()
for a = 1, assets, step do
  local acc = 0
  for t = 1, days do
    if t > 1 then acc = acc + (math.log(all[t][a]) - math.log(all[t - 1][a])) end
    local err = math.abs(result[t][a] - acc) / math.max(1, math.abs(acc))
    if not (err <= worst) then worst = err end
  end
end
local ok = same_bits and worst <= 1e-9
print(("check against a plain loop on %d assets: max error %.3g (tolerance 1e-09): %s"):format(
  math.floor((assets - 1) / step) + 1, worst, ok and "PASS" or "FAIL"))
os.exit(ok and 0 or 1)

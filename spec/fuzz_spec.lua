-- Differential fuzzing (issues 5, 12 and 15): random cases (shapes up to 5-D with lengths 0..5000, a
-- view of them (transpose, narrow, select), any dim, every op (cumsum, cumprod, cummax, cummin with
-- indices, logcumsumexp) and supported dtype pair, reverse, exclusive, mask, reset, and out: none,
-- poisoned, x itself, a view into a poisoned buffer, or that view scanned in place). Every case runs
-- on the CPU and is checked against the plain-Lua oracle of spec/helpers.lua: sums, products, maxima
-- and minima bit for bit, since the CPU folds each line in order as the oracle does (float32, float16
-- and bfloat16 outputs are the rounding of the float64 prefix, zeros keep their signs), indices
-- exactly, logsumexps within H.tol (the oracle folds them another way). With a CUDA device the case
-- runs there too and must agree with the CPU: integers, maxima, minima and indices exactly, float32,
-- float16 and bfloat16 within 1 ulp, float64 within the rounding of a differently associated fold.
--   CUSCAN_FUZZ_SEED     the run's seed (default: a fresh one per run, from CUSCAN_SPEC_SEED or the
--                        clock); printed first, so that any run can be replayed
--   CUSCAN_FUZZ_CASES    how many cases (default 1000; the GPU host runs 10000)
--   CUSCAN_FORCE_FAMILY  passed through to the library untouched, and named in replay lines
-- A failure prints the seed and the case; rerun it with the same CUSCAN_FUZZ_SEED and
-- `busted --filter='fuzz case N:' spec/fuzz_spec.lua`.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local SEED = tonumber(os.getenv("CUSCAN_FUZZ_SEED")) or H.seed_for("fuzz")
local CASES = tonumber(os.getenv("CUSCAN_FUZZ_CASES")) or 1000
local ORACLE_CAP = 6000  -- elements the plain-Lua oracle checks

-- The kernel families (and modes) the CUDA planner can be forced to (cs.force_family): every CUDA
-- case runs as the planner chooses and once more through one of these, picked by the case's number,
-- so the fuzz reaches every family on every kind of case. A family that cannot take a case leaves it
-- to the planner (the result must agree either way).
local FAMILIES = { "rows", "rows/lines", "rows/pieces", "rows/segmented", "rows/warps", "columns", "columns/walk",
                   "columns/lookback", "slabs", "slabs/whole", "slabs/walk", "slabs/lookback" }
local FORCED = os.getenv("CUSCAN_FORCE_FAMILY")

local function replay_line(i, c, family)
  return ("[fuzz replay: CUSCAN_FUZZ_SEED=%d%s busted --filter='fuzz case %d:' spec/fuzz_spec.lua] %s"):format(
    SEED, (family or FORCED) and (" CUSCAN_FORCE_FAMILY=" .. (family or FORCED)) or "", i, H.case_text(c))
end

io.stdout:write(("fuzz: %d cases, CUSCAN_FUZZ_SEED=%d%s\n"):format(CASES, SEED,
  FORCED and (", CUSCAN_FORCE_FAMILY=" .. FORCED) or ""))

-- The oracle's result for a case, rounded as the output dtype stores it (and the indices).
local function oracle(c, x, mask, reset)
  local ref, idx = H.scan_ref(x:totable(), c.dim, { op = c.op, reverse = c.reverse, exclusive = c.exclusive,
                                                    mask = mask and mask:totable() or nil,
                                                    reset = reset and reset:totable() or nil, dtype = c.odtype })
  return H.as_stored(ref, c.odtype), idx
end

-- CUDA's result against the CPU's, by the contract's tolerances.
local function agree(c, y, yd, len)
  if H.is_int_dtype[c.odtype] then
    assert.tensor_equal(y, yd)
  elseif c.op == "max" or c.op == "min" then
    assert.tensor_equal(y, yd, { strict = true })
  elseif c.odtype ~= "float64" then
    local a, b = H.flatten(y:totable()), H.flatten(yd:totable())
    for k = 1, #a do
      local d = H.ulps(a[k], b[k], c.odtype)
      if d > 1 then
        error(("element %d: CPU %.9g, CUDA %.9g, %g %s ulps apart"):format(k, a[k], b[k], d, c.odtype), 2)
      end
    end
  else
    local rtol, atol = H.tol(c.odtype, c.op, len)
    assert.tensor_near(y, yd, rtol, atol)
  end
end

describe("differential fuzzing #fuzz", function()
  local cuda = cs.cuda_available()
  local rng = H.rng(SEED)
  if not cuda then
    pending("fuzz CUDA against the CPU (skipped: " .. cs.cuda_unavailable_reason() .. ")")
  end
  for i = 1, CASES do
    local c = H.random_case(rng, cuda and 400000 or ORACLE_CAP)
    local name = ("fuzz case %d: %s"):format(i, H.case_text(c))
    it(name, function()
      local family
      local ok, err = pcall(function()
        local x, mask, reset = H.case_inputs(c)
        local len = H.case_len(c, x)
        local y, idx = H.run_case(c, x, mask, reset)
        assert.equal(c.odtype, y.dtype)
        assert.same(x:shape(), y:shape())
        if x:numel() == 0 then
          assert.equal(0, y:numel())
        elseif x:numel() <= ORACLE_CAP then
          local expected, expected_idx = oracle(c, x, mask, reset)
          if H.is_int_dtype[c.odtype] then
            H.assert_int_equal(expected, y)
          elseif c.op == "lse" then
            H.assert_result(expected, y, c.odtype, c.op, len)
          else
            assert.tensor_equal(expected, y, { strict = true })
          end
          if expected_idx then H.assert_int_equal(expected_idx, idx) end
        end
        if cuda then
          local xd, md, rd = x:cuda(), mask and mask:cuda() or nil, reset and reset:cuda() or nil
          for _, f in ipairs({ false, FAMILIES[i % #FAMILIES + 1] }) do
            family = f or nil
            cs.force_family(family or FORCED)
            local yd, idxd = H.run_case(c, xd, md, rd)
            assert.equal("cuda", yd.device)
            agree(c, y, yd, len)
            if idx then assert.tensor_equal(idx, idxd) end
          end
          cs.force_family(FORCED)
          family = nil
        end
      end)
      if not ok then
        local note = replay_line(i, c, family) .. "\n"
        if type(err) == "table" and err.message ~= nil then
          err.message = note .. tostring(err.message)
          error(err, 0)
        end
        error(note .. tostring(err), 0)
      end
    end)
  end
end)

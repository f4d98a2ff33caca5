-- Differential fuzzing (issue 5): random cases (shapes up to 5-D with lengths 0..5000, dtype,
-- dim, view, reverse, exclusive, mask, kind of out). With a CUDA device each case runs on CUDA and
-- on the CPU and the two must agree (and both match the plain-Lua oracle on small cases); without
-- one, the CPU is checked against the oracle on small cases.
--   CUSCAN_FUZZ_SEED   the run's seed (default fixed, so CI repeats itself)
--   CUSCAN_FUZZ_CASES  how many cases (default 1000, in total across devices)
-- A failure prints the seed and the case; rerun it with the same CUSCAN_FUZZ_SEED and
-- `busted --filter='fuzz case N:'`.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local SEED = tonumber(os.getenv("CUSCAN_FUZZ_SEED")) or 20260101
local CASES = tonumber(os.getenv("CUSCAN_FUZZ_CASES")) or 1000
local ORACLE_CAP = 6000  -- elements the plain-Lua oracle checks

describe("differential fuzzing #fuzz", function()
  local cuda = cs.cuda_available()
  local rng = H.rng(SEED)
  if not cuda then
    pending("fuzz CUDA against the CPU (no CUDA device: " .. cs.cuda_unavailable_reason() .. ")")
  end
  for i = 1, CASES do
    local c = H.random_case(rng, cuda and 400000 or ORACLE_CAP)
    local name = ("fuzz case %d: %s"):format(i, H.case_text(c))
    it(name, function()
      local ok, err = pcall(function()
        local x, mask = H.case_inputs(c)
        local len = H.case_len(c, x)
        local y = H.run_case(c, x, mask)
        assert.equal(c.odtype, y.dtype)
        assert.same(x:shape(), y:shape())
        if x:numel() == 0 then
          assert.equal(0, y:numel())
        elseif x:numel() <= ORACLE_CAP then
          local expected = H.scan_ref(x:totable(), c.dim, { op = c.op, reverse = c.reverse, exclusive = c.exclusive,
                                                            mask = mask and mask:totable() or nil, dtype = c.odtype })
          H.assert_result(expected, y, c.odtype, c.op, len)
        end
        if cuda then
          local xd, md = x:cuda(), mask and mask:cuda() or nil
          local yd = H.run_case(c, xd, md)
          assert.equal("cuda", yd.device)
          if H.is_int_dtype[c.odtype] then
            assert.tensor_equal(y, yd)
          else
            local rtol, atol = H.tol(c.odtype, c.op, len)
            assert.tensor_near(y, yd, rtol, atol)
          end
        end
      end)
      if not ok then
        local note = ("[fuzz replay: CUSCAN_FUZZ_SEED=%d busted --filter='fuzz case %d:'] %s\n"):format(SEED, i, H.case_text(c))
        if type(err) == "table" and err.message ~= nil then
          err.message = note .. tostring(err.message)
          error(err, 0)
        end
        error(note .. tostring(err), 0)
      end
    end)
  end
end)

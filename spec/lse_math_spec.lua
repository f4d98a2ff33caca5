-- The float64 exp and log of logcumsumexp on CUDA (kernels/lse_math.cuh), built for the host with
-- nvcc and checked against long double on 3,000,000 random arguments from 1e-3 to 1e13 in
-- magnitude: exp within 4e-16 relative (against |x| above 1, where that is what long double
-- resolves), the log of a sum within 4e-16 (relative, absolute below 1).
-- Needs nvcc (not a GPU); pending where there is none.
local H = require("spec.helpers")

-- (subprocesses without the sanitizers `make asan` preloads into this process)
local CLEAN = H.CLEAN_ENV
local nvcc = H.nvcc

describe("logcumsumexp's float64 arithmetic", function()
  local cc = nvcc()
  local it = H.it_unless(not cc and "no nvcc found" or nil)

  it("exp and log agree with long double to 4e-16", function()
    local bin = os.tmpname()
    local build = (CLEAN .. "%s -std=c++17 -O2 -Ikernels -Isrc -x cu spec/support/lse_math_check.cu -o %s 2>&1"):format(cc, bin)
    local p = io.popen(build)
    local log = p:read("*a")
    p:close()
    local run = io.popen(CLEAN .. bin .. " " .. H.seed_for("lse math") % 100000)
    local out = run:read("*a")
    run:close()
    os.remove(bin)
    local e, l = out:match("^exp (%S+) log (%S+)")
    assert.truthy(e, "no result from the check: " .. log .. out)
    assert.is_true(tonumber(e) <= 4e-16, "exp: " .. out)
    assert.is_true(tonumber(l) <= 4e-16, "log: " .. out)
  end)
end)

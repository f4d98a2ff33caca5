-- The CUDA scan dispatch (kernels/scan_dispatch.cu) against the units the Makefile builds
-- (`make units`): built for the host with nvcc and linked against stand-in units that record their
-- names (spec/support/dispatch_check.cu), every dtype pair, op, direction, mask and reset must
-- reach the unit of its part and direction, or be refused where the pair has none. A unit the
-- dispatcher calls but the Makefile does not build fails the link. Needs nvcc (not a GPU).
local H = require("spec.helpers")

-- (subprocesses without the sanitizers `make asan` preloads into this process)
local CLEAN = H.CLEAN_ENV
local nvcc = H.nvcc

local function slurp(cmd)
  local p = io.popen(cmd)
  local s = p:read("*a")
  p:close()
  return s
end

describe("the CUDA scan dispatch", function()
  local cc = nvcc()
  local it = H.it_unless(not cc and "no nvcc found" or nil)

  it("sends every plan to the unit of its part and direction, and only to units that are built", function()
    local units = slurp(CLEAN .. "make -s --no-print-directory units 2>/dev/null")
    local lines, pairs_seen, npairs = {}, {}, 0
    for part, dir, pair in units:gmatch("(%l+)_(%l+)_([%w_]+)\n") do
      lines[#lines + 1] = ("UNIT(%s, %s, %s)"):format(part, dir, pair)
      if not pairs_seen[pair] then pairs_seen[pair], npairs = true, npairs + 1 end
    end
    assert.is_true(#lines > 0, "make units listed none: " .. units)
    local list, bin = os.tmpname(), os.tmpname()
    local f = assert(io.open(list, "w"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    local log = slurp((CLEAN .. "%s -std=c++17 -O1 -Isrc -Ikernels -DUNITS_FILE='\"%s\"' -x cu " ..
                       "spec/support/dispatch_check.cu -o %s 2>&1"):format(cc, list, bin))
    local out = slurp(CLEAN .. bin .. " 2>&1")
    os.remove(list)
    os.remove(bin)
    local n, bad = out:match("(%d+) plans, (%d+) routed wrongly")
    assert.truthy(n, "no result from the check: " .. log .. out)
    -- (each pair has a unit; the check tries 5 ops x 2 directions x mask or not x reset or not)
    assert.equal(npairs * 5 * 8, tonumber(n), out)
    assert.equal(0, tonumber(bad), out)
  end)
end)

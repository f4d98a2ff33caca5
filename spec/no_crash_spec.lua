-- No Lua code can crash the process (issue 12, item 1). spec/support/misuse_walk.lua calls every
-- public function and method (module functions, tensor and event methods, operators, indexing,
-- #x, tostring, the busted assertions, help and timeit) with wrong self, nil, numbers, strings,
-- foreign tables and userdata, NULL and foreign cdata, freed, forged and tampered tensors; every
-- call must return or raise a cuscan: error, and a method with a wrong self must raise one. It
-- runs in a child process, so that a crash fails this spec instead of ending the suite.
local H = require("spec.helpers")
local shell = require("spec.support.shell")

local q = shell.q
local WALK = shell.root .. "/spec/support/misuse_walk.lua"

describe("misuse of any public function or method", function()
  it("raises cuscan: errors and never crashes the process", function()
    local seed = H.seed_for("misuse walk")
    local out, status = H.shell(("%s %s %d 200"):format(q(shell.cuscan), q(WALK), seed))
    local calls, problems = out:match("walked (%d+) calls: %d+ returned, %d+ cuscan errors, (%d+) problems")
    local problem_lines = {}
    for line in out:gmatch("PROBLEM: [^\n]*") do problem_lines[#problem_lines + 1] = line end
    assert.is_truthy(calls, ("the walk (seed %d) did not finish, exit status %s: the process crashed or hung\n%s")
                              :format(seed, tostring(status), out:sub(-2000)))
    assert.is_true(tonumber(calls) > 10000)
    assert.equal(0, tonumber(problems), ("seed %d:\n%s"):format(seed, table.concat(problem_lines, "\n")))
    assert.equal(0, status, out:sub(-2000))
  end)

  it("the walk itself notices a crash, a wrong error and a method that takes any self", function()
    -- a child that dies of a signal leaves no summary line
    local out, status = H.shell(("%s -e %s"):format(q(shell.cuscan),
      q("require('ffi').cast('int *', 0)[0] = 1 print('walked 1 calls: 0 returned, 0 cuscan errors, 0 problems')")))
    assert.is_not.equal(0, status)
    assert.is_nil(out:match("walked %d+ calls"))
    -- a method that returns for a foreign self, and a function that raises a plain Lua error,
    -- are counted as problems
    local chunk = [[
      local M = require("cuscan.core").methods
      M.broken_for_the_test = function() return 1 end
      require("cuscan").broken_for_the_test = function() error("plain") end
      arg = { [1] = "1", [2] = "5" }
      dofile(]] .. ("%q"):format(WALK) .. [[)
    ]]
    out, status = H.shell(("%s -e %s"):format(q(shell.cuscan), q(chunk)))
    assert.is_not.equal(0, status)
    assert.matches("PROBLEM: x:broken_for_the_test with self = nil (dot call) returned instead of raising", out, 1, true)
    assert.matches("PROBLEM: cs%.broken_for_the_test%(.-%) raised a non%-cuscan error: [^\n]*plain", out)
  end)
end)

-- The output handler spec/support/summary.lua, run on fixture suites in a child busted.
local H = require("spec.helpers")

local function busted(files)
  local cmd = ("luajit \"$(command -v busted)\" --output=spec/support/summary.lua --pattern=_fixture %s"):format(files)
  local out, status = H.shell(cmd)
  local last = out:match("([^\n]*)\n*$")
  return out, status, last
end

describe("the summary output", function()
  it("ends with 'N passed, N failed' and exits 0 when all pass", function()
    local out, status, last = busted("spec/fixtures/summary/passing_fixture.lua")
    assert.equal("2 passed, 0 failed", last)
    assert.equal(0, status, out)
  end)

  it("counts errors as failed, adds ', N skipped', and exits non-zero", function()
    local out, status, last = busted("spec/fixtures/summary/mixed_fixture.lua")
    assert.equal("1 passed, 2 failed, 2 skipped", last)
    assert.is_not.equal(0, status)
    -- the full story of each failure and error
    assert.matches("fixture mixed fails on purpose", out, 1, true)
    assert.matches("sums differ on purpose", out, 1, true)
    assert.matches("mixed_fixture.lua:4", out, 1, true)
    assert.matches("fixture mixed errors on purpose", out, 1, true)
    assert.matches("boom on purpose", out, 1, true)
    -- every skipped test with its reason
    assert.matches("is skipped with a reason given at registration", out, 1, true)
    assert.matches("skipped from inside on purpose", out, 1, true)
    -- progress marks
    assert.matches("%.FEss", out)
  end)

  it("counts an error outside any test as failed", function()
    local out, status, last = busted("spec/fixtures/summary/broken_fixture.lua spec/fixtures/summary/passing_fixture.lua")
    assert.equal("2 passed, 1 failed", last)
    assert.matches("describe blew up on purpose", out, 1, true)
    assert.is_not.equal(0, status)
  end)

  it("exits non-zero even when the failures number a multiple of 256", function()
    local _, status, last = busted("spec/fixtures/summary/many_failures_fixture.lua")
    assert.equal("0 passed, 256 failed", last)
    assert.is_not.equal(0, status)
  end)

  it("has exactly one last line of counts", function()
    local out = busted("spec/fixtures/summary/mixed_fixture.lua")
    local count = 0
    for line in out:gmatch("[^\n]+") do
      if line:match("^%d+ passed, %d+ failed") then count = count + 1 end
    end
    assert.equal(1, count)
  end)
end)

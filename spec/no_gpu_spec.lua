-- On a machine without a GPU, every message that explains why CUDA is not used says "no CUDA
-- device found": cs.cuda_unavailable_reason, the errors of {device = "cuda"}, x:cuda(),
-- set_default_device and CUSCAN_DEVICE=cuda, the demo's header (`make demo`) and the REPL's
-- banner. The CUDA runtime's own words are for a machine whose GPU cannot be used.
local cs = require("cuscan")
local H = require("spec.helpers")
local shell = require("spec.support.shell")
local q, sh = shell.q, shell.sh

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local gpu_node = exists("/dev/nvidiactl") or exists("/dev/nvidia0") or exists("/dev/dxg")
local LUA_PATH = shell.root .. "/lua/?.lua;" .. shell.root .. "/lua/?/init.lua;;"
local WANT = "no CUDA device found"

describe("without a GPU", function()
  if cs.cuda_available() or gpu_node then
    pending("this machine has a GPU")
    return
  end

  it("cs.cuda_unavailable_reason says no CUDA device found", function()
    assert.matches("^" .. WANT, cs.cuda_unavailable_reason())
  end)

  it("asking for a CUDA tensor says so, and what was asked", function()
    H.raises(function() local _ = cs.zeros({ 2 }, { device = "cuda" }) end, { "zeros: device: CUDA is not available", WANT })
    H.raises(function() local _ = cs.tensor({ 1, 2 }):cuda() end, { "CUDA is not available", WANT })
    H.raises(function() cs.set_default_device("cuda") end, { "CUDA is not available", WANT })
    H.raises(function() local _ = cs.rand({ 3 }, { device = "cuda" }) end, { "rand: device: CUDA is not available", WANT })
  end)

  it("CUSCAN_DEVICE=cuda stops at require with the same words", function()
    local out, status = sh(("cd / && CUSCAN_DEVICE=cuda LUA_PATH=%s luajit -e %s"):format(q(LUA_PATH),
      q("require('cuscan')")))
    assert.is_not.equal(0, status)
    assert.matches(WANT, out, 1, true)
  end)

  it("the demo (make demo) names the reason in its header", function()
    local out, status = sh(("cd %s && LUA_PATH=%s luajit examples/demo.lua 64"):format(q(shell.root), q(LUA_PATH)))
    assert.equal(0, status, out)
    assert.matches("demo on cpu %(no CUDA: " .. WANT, out)
  end)

  it("the REPL's banner in a terminal says it runs on the CPU and why", function()
    local _, has = sh("command -v script")
    if has ~= 0 then pending("script (util-linux) is not installed") return end
    local out = sh(("cd / && echo exit | script -qec %s /dev/null"):format(q(shell.cuscan)))
    assert.matches("on cpu %(" .. WANT, out)
  end)
end)

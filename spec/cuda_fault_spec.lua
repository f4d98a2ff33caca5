-- A lost CUDA context (issue 5, "sticky CUDA faults"): after a kernel fault every later CUDA call
-- must raise a clear cuscan error, never crash or hand back garbage, while CPU work goes on. The
-- fault ruins the process's context for good, so it happens in a child process. `make sanitize`
-- leaves it out (#nosanitize): memcheck would rightly report the deliberate bad write.
local cs = require("cuscan")

local child = [[
local cs = require("cuscan")
local C = require("cuscan.core").C
local x = cs.rand({1000, 1000}, {device = "cuda", seed = 3})
local y = x:cumsum(2)
cs.synchronize()
local host = cs.tensor({1, 2, 3, 4}, {device = "cpu"})
assert(C.cs_debug_inject_fault() == 0)
local function try(name, f)
  local ok, err = pcall(f)
  print(name, ok and "ok" or "error", ok and "" or tostring(err))
end
try("synchronize", cs.synchronize)
try("cumsum", function() return x:cumsum(1) end)
try("read", function() return y:totable() end)
try("new", function() return cs.rand({3}, {device = "cuda"}) end)
try("memory", function() return cs.memory_info("cuda") end)
print("cpu", table.concat(host:cumsum(1):totable(), " "))
]]

describe("a lost CUDA context #cuda #nosanitize", function()
  if not cs.cuda_available() then
    pending("skipped: " .. cs.cuda_unavailable_reason())
    return
  end

  it("turns every later CUDA call into a cuscan error while CPU tensors keep working", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(child)
    f:close()
    -- the child finds the module where this process found it, whatever LUA_PATH the runner was given
    local p = io.popen("LUA_PATH='" .. package.path .. "' luajit " .. path .. " 2>&1; echo exit=$?")
    local out = p:read("*a")
    p:close()
    os.remove(path)
    local lines = {}
    for name, status, msg in out:gmatch("(%a+)\t(%a+)\t([^\n]*)") do lines[name] = { status, msg } end
    for _, name in ipairs({ "synchronize", "cumsum", "read", "new", "memory" }) do
      assert.is_table(lines[name], "no report for " .. name .. " in:\n" .. out)
      assert.equal("error", lines[name][1], name .. " did not fail:\n" .. out)
      assert.matches("cuscan: ", lines[name][2], 1, true)
    end
    assert.matches("restart the process", lines.cumsum[2], 1, true)
    assert.matches("cpu\t1 3 6 10", out, 1, true)
    assert.matches("exit=0", out, 1, true)
  end)
end)

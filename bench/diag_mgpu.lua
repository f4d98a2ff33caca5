local cs = require("cuscan")
local function t(fn, devs)
  for _ = 1, 3 do fn() end
  for _, d in ipairs(devs) do cs.synchronize(d) end
  local best = 1e9
  for _ = 1, 5 do
    local t0 = os.clock(); local w0 = cs.event and nil
    local s = require("ffi")
    fn()
    for _, d in ipairs(devs) do cs.synchronize(d) end
  end
  local e0 = cs.event("cuda:0"); local e1 = cs.event("cuda:0")
  local f0 = cs.event("cuda:1"); local f1 = cs.event("cuda:1")
  e0:record(); f0:record(); fn(); e1:record(); f1:record()
  for _, d in ipairs(devs) do cs.synchronize(d) end
  return e0:elapsed(e1), f0:elapsed(f1)
end
local a = cs.rand({ 2 ^ 15, 2 ^ 15 }, { device = "cuda:0" })
local b = cs.rand({ 2 ^ 15, 2 ^ 15 }, { device = "cuda:1" })
local oa, ob = a:clone(), b:clone()
print("gpu0 only out=", t(function() a:cumsum(2, { out = oa }) end, { "cuda:0" }))
print("gpu1 only out=", t(function() b:cumsum(2, { out = ob }) end, { "cuda:1" }))
print("gpu0 only fresh", t(function() a:cumsum(2) end, { "cuda:0" }))
print("gpu1 only fresh", t(function() b:cumsum(2) end, { "cuda:1" }))
print("both out=", t(function() a:cumsum(2, { out = oa }); b:cumsum(2, { out = ob }) end, { "cuda:0", "cuda:1" }))
print("both fresh", t(function() a:cumsum(2); b:cumsum(2) end, { "cuda:0", "cuda:1" }))
local s = cs.shard(cs.rand({ 2 ^ 16, 2 ^ 15 }, { device = "cuda:0" }), 1, { "cuda:0", "cuda:1" })
print("sharded dim2", t(function() s:cumsum(2) end, { "cuda:0", "cuda:1" }))

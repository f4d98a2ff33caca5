-- bench/scan_once.lua - one scan, repeated, for a profiler to look at (ncu --launch-skip 2):
--   luajit bench/scan_once.lua SHAPE DIM [DTYPE] [FAMILY] [masked|-] [OP]
-- SHAPE as 2^22x16 or 64x4096x256; FAMILY a kernel family for cs.force_family ("-" for none); OP
-- cumsum (the default), cumprod, logcumsumexp, cummax or cummin.
local cs = require("cuscan")
local function size(s) local b, e = s:match("^(%d+)%^(%d+)$"); return b and tonumber(b) ^ tonumber(e) or tonumber(s) end
local shape = {}
for part in arg[1]:gmatch("[^x]+") do shape[#shape + 1] = size(part) end
local dim, dtype, family = tonumber(arg[2]), arg[3] or "float32", arg[4]
if family and family ~= "-" then cs.force_family(family) end
local x = cs.rand(shape, { dtype = dtype, seed = 1 })
local out = cs.rand(shape, { dtype = dtype, seed = 2 })
local mask = arg[5] == "masked" and cs.rand(shape, { seed = 3 }):lt(0.5) or nil
local op = arg[6] or "cumsum"
local outs = (op == "cummax" or op == "cummin") and { out, cs.empty(shape, { dtype = "int64" }) } or out

print(cs.explain(x, dim, { out = outs, mask = mask, op = op }))
for _ = 1, 3 do x[op](x, dim, { out = outs, mask = mask }) end
cs.synchronize()

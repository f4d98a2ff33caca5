-- bench/cells.lua - a few cumsum cases of any shape, each against a device copy of the same tensor
-- timed in the same process (bench/grid.lua's method and floor: input and output bytes, the mask at
-- a byte an element), with the plan that ran; for A/B runs of one case list (e.g. under an
-- environment variable that changes a kernel's path).
--   luajit bench/cells.lua [--reps N] CASE ...
-- CASE is SHAPE:DIM[:DTYPE[:masked]], SHAPE as 13000000x5 or 3x333333x7 (2^k allowed).
local cs = require("cuscan")

local reps, cases = 15, {}
local i = 1
while i <= #arg do
  if arg[i] == "--reps" then
    reps = tonumber(arg[i + 1])
    i = i + 1
  else
    cases[#cases + 1] = arg[i]
  end
  i = i + 1
end

local function size(s)
  local b, e = s:match("^(%d+)%^(%d+)$")
  return b and tonumber(b) ^ tonumber(e) or assert(tonumber(s), "cells: bad size " .. s)
end
local BYTES = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int32 = 4, int64 = 8 }

local timer = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./") .. "event_timer.lua")
local time_on_device = timer.on("cuda")
local function time_ms(fn) return time_on_device(fn, reps) end

for _, case in ipairs(cases) do
  local shape_s, dim_s, dtype, masked = case:match("^([^:]+):(%d+):?([%w]*):?(%w*)$")
  assert(shape_s, "cells: bad case " .. case)
  dtype = dtype ~= "" and dtype or "float32"
  local shape, n = {}, 1
  for part in shape_s:gmatch("[^x]+") do
    shape[#shape + 1] = size(part)
    n = n * shape[#shape]
  end
  local dim = tonumber(dim_s)
  -- integer inputs: small random integers (rand is for float dtypes)
  local function input(seed)
    if dtype:match("^int") then return (cs.rand(shape, { seed = seed }) * 100):to(dtype) end
    return cs.rand(shape, { dtype = dtype, seed = seed })
  end
  local x, y = input(1), input(2)
  local m = masked == "masked" and cs.rand(shape, { seed = 3 }):lt(0.5) or nil
  local copy_ms = time_ms(function() y:copy(x) end)
  local ms = time_ms(function() x:cumsum(dim, { out = y, mask = m }) end)
  copy_ms = math.min(copy_ms, time_ms(function() y:copy(x) end))
  local floor_bytes = 2 * n * BYTES[dtype] + (m and n or 0)
  local frac = floor_bytes / ms / (2 * n * BYTES[dtype] / copy_ms)
  local plan = cs.explain(x, dim, { mask = m, out = y }):match("^cuda (%S+):") or "?"
  print(("%-36s %9.4f ms  copy %8.4f ms  %6.1f%%  %s"):format(case, ms, copy_ms, 100 * frac, plan))
  x, y, m = nil, nil, nil
  collectgarbage()
end

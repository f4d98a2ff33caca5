-- int32 sums of rows on the CPU (src/cpu/scan.c int32_rows_sum): lines that run forward at unit
-- stride in x and out, unmasked and from the identity, are summed one at a time, eight steps a
-- vector (three shifted adds, then the carry). Every output is checked against plain Lua (exact
-- sums in double, wrapped to 32 bits), read from the output's memory: lines of 255 (the walks), 256
-- and odd lengths, many lines, values across the whole int32 range (sums that wrap), inclusive and
-- exclusive, in place, into poisoned outputs, narrowed inputs and outputs (lines that start off any
-- alignment) and a transposed output (the walks again).
local cs = require("cuscan")
local ffi = require("ffi")
local H = require("spec.helpers")
require("cuscan.assertions")

local POISON = 0x7f7f7f7f

-- element (r, c) (0-based) of a 2-d int32 tensor, from its memory
local function reader(t)
  local p = ffi.cast("int32_t *", t:data_ptr())
  local s1, s2 = t:stride(1), t:stride(2)
  return function(r, c) return p[r * s1 + c * s2] end
end

local function wrap32(v)
  v = v % 2 ^ 32
  return v >= 2 ^ 31 and v - 2 ^ 32 or v
end

-- each line's wrapped prefix sums (exclusive: of the elements before) against y
local function check(x, y, excl, what)
  local rows, len = x:size(1), x:size(2)
  local a, get = reader(x), reader(y)
  for r = 0, rows - 1 do
    local acc = 0
    for c = 0, len - 1 do
      local v = a(r, c)
      local want = wrap32(excl and acc or acc + v)
      acc = acc + v
      if get(r, c) ~= want then
        error(("%s: line %d step %d of %dx%d: got %d, want %d"):format(what, r, c, rows, len, get(r, c), want), 2)
      end
    end
  end
end

local function input(rng, shape)
  return (cs.rand(shape, { seed = rng:next(), device = "cpu", dtype = "float64" }) * 2 ^ 32 - 2 ^ 31):to("int32")
end

local function poisoned(shape)
  local y = cs.empty(shape, { dtype = "int32", device = "cpu" })
  y:fill(POISON)
  return y
end

describe("int32 sums of rows on the CPU", function()
  it("match plain Lua, wrapping, inclusive and exclusive, into poisoned outputs", function()
    H.with_rng("cpu int32 rows", function(rng)
      for _, shape in ipairs({ { 1, 256 }, { 3, 255 }, { 2, 257 }, { 5, 1000 }, { 7, 4099 }, { 33, 263 }, { 1030, 4103 } }) do
        for _, excl in ipairs({ false, true }) do
          local x = input(rng, shape)
          local y = poisoned(shape)
          cs.cumsum(x, 2, { out = y, exclusive = excl })
          check(x, y, excl, ("%dx%d%s"):format(shape[1], shape[2], excl and " exclusive" or ""))
        end
      end
    end)
  end)

  it("match plain Lua in place, on narrowed views and into a transposed output", function()
    H.with_rng("cpu int32 rows views", function(rng)
      for _, len in ipairs({ 256, 1001, 4099 }) do
        for _, excl in ipairs({ false, true }) do
          local rows = 37
          local what = ("%dx%d%s"):format(rows, len, excl and " exclusive" or "")
          -- in place: x is its own output
          local x = input(rng, { rows, len })
          local before = x:clone()
          cs.cumsum(x, 2, { out = x, exclusive = excl })
          check(before, x, excl, what .. " in place")
          -- narrowed input and output: each line starts one or three elements on
          local xv = input(rng, { rows, len + 5 }):narrow(2, 2, len)
          local yv = poisoned({ rows, len + 3 }):narrow(2, 4, len)
          cs.cumsum(xv, 2, { out = yv, exclusive = excl })
          check(xv, yv, excl, what .. " narrowed")
          assert.equal(POISON, tonumber(ffi.cast("int32_t *", yv:data_ptr())[-1])) -- nothing before it touched
          -- a transposed output (not this path) still agrees
          local yt = poisoned({ len, rows }):transpose(1, 2)
          cs.cumsum(xv, 2, { out = yt, exclusive = excl })
          check(xv, yt, excl, what .. " transposed out")
        end
      end
    end)
  end)

  it("take the vector path where it applies, as explain says", function()
    local x = cs.zeros({ 4, 256 }, { dtype = "int32", device = "cpu" })
    assert.truthy(cs.explain(x, 2):find("eight steps a vector", 1, true))
    assert.falsy(cs.explain(x:narrow(2, 1, 255), 2):find("eight steps a vector", 1, true))
    assert.falsy(cs.explain(x, 2, { reverse = true }):find("eight steps a vector", 1, true))
  end)
end)

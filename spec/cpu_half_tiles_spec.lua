-- The CPU's float16 and bfloat16 tiles (src/cpu/float_tiles.c and float_tiles_avx2.h): rows and
-- columns whose outputs are streamed as whole 64-byte lines through a buffer (32 steps of 8 rows,
-- or 32 columns a step), the whole groups of 8 after them in plain stores, the rest one element at
-- a time; float16 rounded through floats rounded to odd. Values mix large and tiny elements whose
-- prefixes cancel, so that a float32 fold would lose what the float64 fold keeps. Each output must
-- be the in-order float64 prefix of its line rounded once: against plain Lua on whole lines, and on
-- the whole tensor against the generic walk (the same scan through a view with a step of 2).
local cs = require("cuscan")
local H = require("spec.helpers")
require("cuscan.assertions")

-- large, tiny and middling values of each type: a large one and a tiny one sum exactly in float64,
-- not in float32 (nor in the half type), and the large ones cancel
local VALUES = {
  float16 = { big = 2048, tiny = { 2 ^ -24, 3 * 2 ^ -24, 2 ^ -14, 5 * 2 ^ -20 }, mid = { 1.5, 0.375, 3 } },
  bfloat16 = { big = 2 ^ 20, tiny = { 2 ^ -20, 3 * 2 ^ -24, 2 ^ -126, 2 ^ -133 }, mid = { 1.5, 0.375, 3 } },
}

-- a tensor of `shape` (float64 values exact in dtype, then dtype): mostly +-big, else tiny or
-- middling, signs at random; products: values near 1
local function values(rng, shape, dtype, prod)
  local v = VALUES[dtype]
  local function r() return cs.rand(shape, { seed = rng:next(), dtype = "float64", device = "cpu" }) end
  if prod then
    return (r():lt(0.5):to("float64") * 2 ^ -7 + 1 - 2 ^ -8):to(dtype)
  end
  local sign = r():lt(0.5):to("float64") * 2 - 1
  local big = r():lt(0.6):to("float64")
  local tiny = r():lt(0.5):to("float64")
  local small = tiny * rng:pick(v.tiny) + (1 - tiny) * rng:pick(v.mid)
  return (sign * (big * v.big + (1 - big) * small)):to(dtype)
end

-- x's values in a view whose elements lie 2 apart, which the tiles leave to the generic walk
local function spread(x)
  local dims = x:shape()
  local v = cs.empty({ dims[1], dims[2], 2 }, { dtype = x.dtype, device = "cpu" }):select(3, 2)
  v:copy(x)
  return v
end

-- a line's float64 prefixes (the plain-Lua oracle of spec/helpers.lua), each rounded once to dtype
local function line_ref(xs, mask, o, dtype)
  local out = H.scan_line(xs, { op = o.prod and "prod" or "sum", reverse = o.reverse, exclusive = o.exclusive, mask = mask })
  for i, v in ipairs(out) do out[i] = H.round_half(v, dtype) end
  return out
end

local function line_of(t, dim, j)
  return t:select(3 - dim, j):contiguous():totable()
end

-- scans x along dim into out (poisoned first) and checks it; out: nil for a fresh tensor
local function check(rng, x, dim, o, mask, out)
  local dtype = x.dtype
  local scan = o.prod and cs.cumprod or cs.cumsum
  local opts = { reverse = o.reverse, exclusive = o.exclusive, mask = mask }
  if out then out:fill(0 / 0) end
  opts.out = out
  local got = scan(x, dim, opts)
  local want = scan(spread(x), dim, { reverse = o.reverse, exclusive = o.exclusive, mask = mask and spread(mask) })
  assert.tensor_equal(want, got, { strict = true })
  local nlines = x:shape()[3 - dim]
  for _, j in ipairs({ 1, rng:int(1, nlines), nlines }) do
    local ref = line_ref(line_of(x, dim, j), mask and line_of(mask, dim, j), o, dtype)
    assert.tensor_equal(cs.tensor(ref, { dtype = dtype, device = "cpu" }), got:select(3 - dim, j), { strict = true },
                        ("%s line %d of %s"):format(dtype, j, cs.explain(x, dim, opts)))
  end
end

-- whether this CPU has the tiles (AVX2, FMA and F16C): the plan of a small scan says so
local TILES_RUN = cs.explain(cs.empty({ 16, 64 }, { dtype = "float16", device = "cpu" }), 2):find("float tiles", 1, true) ~= nil

local FLAGS = {
  {}, { reverse = true }, { exclusive = true }, { masked = true }, { reverse = true, exclusive = true, masked = true },
  { prod = true }, { prod = true, reverse = true, exclusive = true },
}

describe("the CPU's half tiles", function()
  for _, dtype in ipairs({ "float16", "bfloat16" }) do
    it(dtype .. " rows and columns of odd sizes, every flag, bit for bit", function()
      H.with_rng("half tiles small " .. dtype, function(rng)
        for _, shape in ipairs({ { 7, 999 }, { 999, 7 }, { 13, 999 }, { 999, 13 }, { 40, 71 } }) do
          for _, o in ipairs(FLAGS) do
            local x = values(rng, shape, dtype, o.prod)
            local mask = o.masked and cs.rand(shape, { seed = rng:next(), device = "cpu" }):lt(0.6) or nil
            check(rng, x, 2, o, mask)
            check(rng, x, 1, o, mask)
          end
        end
      end)
    end)

    -- larger than the caches (33.8 MB out): streamed, from a peel of steps or lines where out's lines
    -- start off the 64-byte alignment, with whole groups of 8 and single elements after the stream
    it(dtype .. " rows and columns larger than the caches, into aligned and unaligned outputs, bit for bit", function()
      H.with_rng("half tiles large " .. dtype, function(rng)
        local lines, len = 2062, 8195
        for i, o in ipairs({ {}, FLAGS[rng:int(2, #FLAGS)], { reverse = true, exclusive = true, masked = true } }) do
          local rows = values(rng, { lines, len }, dtype, o.prod)
          if TILES_RUN then
            assert.matches("float tiles in registers, streaming stores", cs.explain(rows, 2))
            assert.matches("float tiles in registers, streaming stores", cs.explain(rows:transpose(1, 2):contiguous(), 1))
          end
          local mask = o.masked and cs.rand({ lines, len }, { seed = rng:next(), device = "cpu" }):lt(0.6) or nil
          -- lines 8224 halves apart (a multiple of 64 bytes), each starting 2 halves past a boundary
          local out = i == 2 and cs.empty({ lines, 8224 }, { dtype = dtype, device = "cpu" }):narrow(2, 3, len) or nil
          check(rng, rows, 2, o, mask, out)
          local cols = rows:transpose(1, 2):contiguous()
          local cmask = mask and mask:transpose(1, 2):contiguous()
          -- steps 2080 halves apart, each starting 5 halves past a boundary
          local outc = i == 2 and cs.empty({ len, 2080 }, { dtype = dtype, device = "cpu" }):narrow(2, 6, lines) or nil
          check(rng, cols, 1, o, cmask, outc)
        end
      end)
    end)
  end
end)

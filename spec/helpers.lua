-- Shared pieces of cuscan's specs:
--   * an independent oracle: plain-Lua scans (double precision for floats, exact wrapping 64-bit
--     integer arithmetic for integers) over nested tables, written from the definitions;
--   * a seeded random generator of its own (minstd), so inputs are fresh on every run yet any
--     failure names the seed that replays it (CUSCAN_SPEC_SEED=<n> busted ...);
--   * device suites: the same spec body runs on "cpu" and on "cuda"; without a CUDA device the
--     CUDA tests are reported as pending with the reason instead of being dropped.
local ffi = require("ffi")
local bit = require("bit")
local cs = require("cuscan")
local assert = require("luassert")
require("cuscan.assertions")

local H = {}
H.cs = cs

---------------------------------------------------------------------------------------------------
-- Random numbers
---------------------------------------------------------------------------------------------------
local Rng = {}
Rng.__index = Rng

-- Park-Miller "minimal standard" generator: exact in doubles.
function H.rng(seed)
  return setmetatable({ s = (math.floor(seed) % 2147483646) + 1, seed = seed }, Rng)
end

function Rng:next()
  self.s = (self.s * 48271) % 2147483647
  return self.s
end

function Rng:uniform(lo, hi)
  lo, hi = lo or 0, hi or 1
  return lo + (hi - lo) * ((self:next() - 1) / 2147483646)
end

function Rng:int(lo, hi) return lo + (self:next() % (hi - lo + 1)) end
function Rng:bool(p) return self:uniform() < (p or 0.5) end
function Rng:pick(list) return list[self:int(1, #list)] end

-- 32 random bits as a number (next() gives 31 at a time).
function Rng:bits32() return self:next() * 2 + self:int(0, 1) end

-- Any int64, as int64_t cdata.
function Rng:int64()
  return bit.bor(bit.lshift(ffi.cast("int64_t", self:bits32()), 32), ffi.cast("int64_t", self:bits32()))
end

-- Any double but NaN: every exponent, denormals, both zeros and infinities. NaN bit patterns
-- are rejected on the bits, before the double is read: LuaJIT takes some NaNs loaded from C
-- memory (sign and top payload bits set) for tagged values, which then compare equal to
-- themselves and are not numbers.
local bits64 = ffi.new("union { double d; int64_t i; }")
local EXP_MASK, FRAC_MASK = 0x7ff0000000000000LL, 0x000fffffffffffffLL
function Rng:any_double()
  local i
  repeat i = self:int64() until bit.band(i, EXP_MASK) ~= EXP_MASK or bit.band(i, FRAC_MASK) == 0
  bits64.i = i
  return bits64.d
end

H.base_seed = tonumber(os.getenv("CUSCAN_SPEC_SEED")) or (os.time() % 1000003)

-- A seed for a named case: the run's base seed mixed with the name, so cases differ but each is
-- replayed by the same CUSCAN_SPEC_SEED.
function H.seed_for(name)
  local h = 5381
  for i = 1, #name do h = (h * 33 + name:byte(i)) % 2147483647 end
  return (h + H.base_seed * 7919) % 2147483647
end

-- Runs body(rng, seed) with a generator seeded for the named case; a failure inside names the seed
-- that replays it.
function H.with_rng(name, body)
  local seed = H.seed_for(name)
  H.replay(seed, name, function() body(H.rng(seed), seed) end)
end

-- Runs fn; a failure or error inside gets the seed and the case prepended to its message.
function H.replay(seed, case, fn)
  local ok, err = pcall(fn)
  if ok then return end
  local note = ("[replay: CUSCAN_SPEC_SEED=%s, case seed %s] %s\n"):format(tostring(H.base_seed), tostring(seed), case)
  if type(err) == "table" and err.message ~= nil then
    err.message = note .. tostring(err.message)
    error(err, 0)
  end
  error(note .. tostring(err), 0)
end

---------------------------------------------------------------------------------------------------
-- Nested tables
---------------------------------------------------------------------------------------------------
function H.shape_of(v)
  local shape = {}
  while type(v) == "table" do
    shape[#shape + 1] = #v
    v = v[1]
  end
  return shape
end

function H.numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- Row-major flat list of the leaves and the shape.
function H.flatten(v, shape)
  shape = shape or H.shape_of(v)
  local flat = {}
  local function walk(t, d)
    if d > #shape then
      flat[#flat + 1] = t
      return
    end
    for i = 1, shape[d] do walk(t[i], d + 1) end
  end
  walk(v, 1)
  return flat, shape
end

function H.unflatten(flat, shape)
  if #shape == 0 then return flat[1] end
  local k = 0
  local function build(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then
        k = k + 1
        t[i] = flat[k]
      else
        t[i] = build(d + 1)
      end
    end
    return t
  end
  return build(1)
end

-- A nested table of the given shape whose leaves come from gen(i) (i: 1-based flat index).
function H.build(shape, gen)
  local flat = {}
  for i = 1, H.numel(shape) do flat[i] = gen(i) end
  return H.unflatten(flat, shape)
end

---------------------------------------------------------------------------------------------------
-- The oracle
---------------------------------------------------------------------------------------------------
local INT = { int32 = true, int64 = true, bool = true }
H.is_int_dtype = INT

local int64 = ffi.typeof("int64_t")
local function wrap32(v)
  local lo = bit.band(v, 0xffffffffLL)
  if lo >= 0x80000000LL then lo = lo - 0x100000000LL end
  return lo
end

local function to_int64(v)
  if type(v) == "boolean" then return v and 1LL or 0LL end
  return int64(v)
end

-- The folds of the oracle, one per op, written from the definitions (README's contract). Each is a
-- constructor returning start(), take(v, i), skip(), value() and at(): start begins a segment at
-- the identity; take folds in element i's value; skip is a masked-out element; value is the running
-- result; at the 1-based index of max and min (0 while nothing is taken). empty: the exclusive
-- scan's empty prefix.
local FOLDS = {}

-- Sums and products: acc starts at the identity (-0.0 for float sums, since -0.0 + x == x for every
-- x); a masked-out element reads as +0.0 or 1, as where(mask, x, 0) would give; the empty prefix is
-- +0.0 or 1. Floats accumulate in double; integers are int64 cdata (exact, wrapping as two's
-- complement), int32 outputs wrapping to 32 bits.
local function arith_fold(op, odt)
  local int = INT[odt]
  local ident = int and (op == "sum" and 0LL or 1LL) or (op == "sum" and -0.0 or 1.0)
  local masked = int and ident or (op == "sum" and 0.0 or 1.0)
  local acc
  local function add(v)
    if int then
      v = to_int64(v)
      if op == "sum" then acc = acc + v else acc = acc * v end
      if odt == "int32" then acc = wrap32(acc) end
    else
      if type(v) == "boolean" then v = v and 1 or 0 end
      if op == "sum" then acc = acc + v else acc = acc * v end
    end
  end
  return {
    empty = masked,
    start = function() acc = ident end,
    take = function(v) add(v) end,
    skip = function() add(masked) end,
    value = function() return acc end,
    at = function() return 0 end,
  }
end
FOLDS.sum = function(odt) return arith_fold("sum", odt) end
FOLDS.prod = function(odt) return arith_fold("prod", odt) end

-- The identities of max and min by dtype (bool compares as 0 < 1).
local LOWEST = { int32 = -2147483648LL, int64 = -0x8000000000000000LL, bool = 0 }
local HIGHEST = { int32 = 2147483647LL, int64 = 0x7fffffffffffffffLL, bool = 1 }

-- Max and min as PyTorch's cummax and cummin: a NaN is taken over anything and so is each later NaN;
-- otherwise an element is taken when it is >= the running maximum (<= the minimum), so ties go to
-- the element met later. Values come out as they went in (bool as booleans).
local function extreme_fold(op, odt)
  local ident
  if op == "max" then ident = LOWEST[odt] or -math.huge else ident = HIGHEST[odt] or math.huge end
  local better = op == "max" and function(v, acc) return v >= acc end or function(v, acc) return v <= acc end
  local acc, at
  local function out(v) if odt == "bool" then return v ~= 0 end return v end
  return {
    empty = out(ident),
    start = function() acc, at = ident, 0 end,
    take = function(v, i)
      if type(v) == "boolean" then v = v and 1 or 0 end
      if v ~= v or (acc == acc and better(v, acc)) then acc, at = v, i end
    end,
    skip = function() end,
    value = function() return out(acc) end,
    at = function() return at end,
  }
end
FOLDS.max = function(odt) return extreme_fold("max", odt) end
FOLDS.min = function(odt) return extreme_fold("min", odt) end

-- logsumexp as a running maximum m carried with the sum s of exp(x - m), an independent form of the
-- pairwise combine the library folds with: -inf is the identity (skipped), a NaN makes every later
-- result NaN, +inf every later result +inf unless a NaN comes.
FOLDS.lse = function()
  local m, s, nan, inf
  return {
    empty = -math.huge,
    start = function() m, s, nan, inf = -math.huge, 0, false, false end,
    take = function(v)
      if v ~= v then nan = true
      elseif v == math.huge then inf = true
      elseif v > m then s, m = s * math.exp(m - v) + 1, v
      elseif v > -math.huge then s = s + math.exp(v - m) end
    end,
    skip = function() end,
    value = function()
      if nan then return 0 / 0 end
      if inf then return math.huge end
      if m == -math.huge then return m end
      return m + math.log(s)
    end,
    at = function() return 0 end,
  }
end

-- The scan of one line (a Lua array): opts {op = "sum" | "prod" | "max" | "min" | "lse", reverse,
-- exclusive, mask = booleans, reset = booleans, dtype = output dtype name, initial = a value}.
-- Element i of an inclusive scan is the fold after taking in x[i]; of an exclusive scan, the fold
-- before it, a segment's first element getting the empty prefix; reverse walks from the end; a true
-- reset makes its element the first of a new segment (met in the walk's direction). An initial
-- value is taken in before the first element met, so that the first segment starts from it (and an
-- exclusive scan's first output is it), unless a reset at that element starts afresh. Returns the
-- outputs and, for max and min, the 1-based indices (0 where nothing was taken).
function H.scan_line(xs, opts)
  local op, odt = opts.op or "sum", opts.dtype or "float64"
  local rev, excl, mask, reset = opts.reverse, opts.exclusive, opts.mask, opts.reset
  local fold = FOLDS[op](odt)
  local n = #xs
  local out, idx = {}, {}
  for k = 1, n do
    local i = rev and (n + 1 - k) or k
    local first = k == 1 or (reset ~= nil and reset[i])
    if first then fold.start() end
    if k == 1 and opts.initial ~= nil and not (reset ~= nil and reset[i]) then
      fold.take(opts.initial, 0)
      first = false
    end
    local before, before_at = fold.value(), fold.at()
    if mask == nil or mask[i] then fold.take(xs[i], i) else fold.skip() end
    if excl then
      out[i], idx[i] = first and fold.empty or before, first and 0 or before_at
    else
      out[i], idx[i] = fold.value(), fold.at()
    end
  end
  if op == "max" or op == "min" then return out, idx end
  return out
end

-- The scan of a nested table along dim (1-based; negative from the end) with opts
-- {op, reverse, exclusive, mask = nested booleans, reset = nested booleans, dtype = output dtype,
-- initial = one value for every line, or a (nested) table of one value per line in row-major order
-- of x's shape without dim}. A 0-d value (a number) is a line of one element. Returns the outputs (and, for max and min, the
-- indices) as nested tables.
function H.scan_ref(values, dim, opts)
  opts = opts or {}
  local shape = H.shape_of(values)
  if #shape == 0 then
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.mask = opts.mask ~= nil and { opts.mask } or nil
    o.reset = opts.reset ~= nil and { opts.reset } or nil
    if type(o.initial) == "table" then o.initial = H.flatten(o.initial)[1] end
    local y, i = H.scan_line({ values }, o)
    return y[1], i and i[1]
  end
  local nd = #shape
  local d = dim < 0 and nd + dim + 1 or dim
  if not (d >= 1 and d <= nd) then error("scan_ref: bad dim " .. tostring(dim), 2) end
  local flat = H.flatten(values, shape)
  local mflat = opts.mask and H.flatten(opts.mask, shape) or nil
  local rflat = opts.reset and H.flatten(opts.reset, shape) or nil
  local strides, s = {}, 1
  for i = nd, 1, -1 do strides[i] = s; s = s * shape[i] end
  local out, idx = {}, {}
  local len, step = shape[d], strides[d]
  local total = #flat
  local indexed = opts.op == "max" or opts.op == "min"
  local lo = { op = opts.op, reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype }
  local iflat = type(opts.initial) == "table" and H.flatten(opts.initial) or nil
  -- every line starts at a flat index whose coordinate along d is 0
  for start = 0, len == 0 and -1 or total - 1 do
    if math.floor(start / step) % len == 0 then
      local xs, ms, rs = {}, mflat and {} or nil, rflat and {} or nil
      for k = 1, len do
        local at = start + (k - 1) * step + 1
        xs[k] = flat[at]
        if ms then ms[k] = mflat[at] end
        if rs then rs[k] = rflat[at] end
      end
      lo.mask, lo.reset = ms, rs
      -- the line's place among the lines: its outer index times step plus its inner offset
      lo.initial = opts.initial
      if iflat then lo.initial = iflat[math.floor(start / (step * len)) * step + start % step + 1] end
      local ys, is = H.scan_line(xs, lo)
      for k = 1, len do
        out[start + (k - 1) * step + 1] = ys[k]
        if is then idx[start + (k - 1) * step + 1] = is[k] end
      end
    end
  end
  if indexed then return H.unflatten(out, shape), H.unflatten(idx, shape) end
  return H.unflatten(out, shape)
end

---------------------------------------------------------------------------------------------------
-- Inputs
---------------------------------------------------------------------------------------------------
-- Random leaves suited to a dtype and an op: floats in [-1, 1) for sums and +-[0.75, 1.25) for
-- products (long lines neither overflow nor underflow); small integers; booleans.
function H.random_value(rng, dtype, op)
  if dtype == "bool" then return rng:bool(0.5) end
  if dtype == "int32" or dtype == "int64" then
    if op == "prod" then return rng:pick({ -2, -1, 1, 2, 3 }) end
    return rng:int(-1000, 1000)
  end
  if op == "prod" then
    local v = rng:uniform(0.75, 1.25)
    return rng:bool(0.5) and v or -v
  end
  local v = rng:uniform(-1, 1)
  if v == 0 then v = 0.5 end
  return v
end

function H.random_table(rng, shape, dtype, op)
  return H.build(shape, function() return H.random_value(rng, dtype, op) end)
end

function H.random_mask(rng, shape, p)
  return H.build(shape, function() return rng:bool(p or 0.6) end)
end

-- float32 rounding of a double, as the tensor will hold it
local f32box = ffi.new("float[1]")
function H.f32(v)
  f32box[0] = v
  return f32box[0]
end

-- How many float32 values lie between a and b (both float32 values; -0.0 and +0.0 count as one,
-- the largest float and inf are neighbours): 0 when equal or both NaN, inf when one is NaN.
local bitbox = ffi.new("union { float f; int32_t i; }")
local function f32_order(v)
  bitbox.f = v
  local i = bitbox.i
  if i < 0 then i = -2147483648 - i end
  return i
end
function H.f32_ulps(a, b)
  if a ~= a or b ~= b then return (a ~= a and b ~= b) and 0 or math.huge end
  return math.abs(f32_order(a) - f32_order(b))
end

-- The 2-byte floats, from their definitions: exponent bits, fraction bits, least normal exponent,
-- largest finite value.
local HALF = {
  float16 = { ebits = 5, mbits = 10, emin = -14, max = 65504 },
  bfloat16 = { ebits = 8, mbits = 7, emin = -126, max = (2 - 2 ^ -7) * 2 ^ 127 },
}
H.HALF = HALF

-- x rounded to an integer, ties to the even one (x - floor(x) is exact in double).
local function round_half_even(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 ~= 0) then return f + 1 end
  return f
end

-- The double v rounded to float16 or bfloat16 (as a double): to the nearest multiple of the last
-- place at v's magnitude, ties to even, straight from the double; +-inf beyond the largest finite
-- value, signed zeros kept, NaN stays NaN, denormals kept. Written from the formats' definitions,
-- apart from the C core's bit manipulation.
function H.round_half(v, dtype)
  local f = HALF[dtype]
  if v ~= v or v == math.huge or v == -math.huge then return v end
  local _, e = math.frexp(v)   -- |v| in [2^(e-1), 2^e)
  local q = 2 ^ (math.max(e - 1, f.emin) - f.mbits)
  local r = round_half_even(v / q) * q
  if math.abs(r) > f.max then return v > 0 and math.huge or -math.huge end
  if r == 0 then return (v < 0 or 1 / v < 0) and -0.0 or 0.0 end
  return r
end

-- v as stored in dtype (a number; other dtypes keep it).
function H.stored(v, dtype)
  if dtype == "float32" then return H.f32(v) end
  if HALF[dtype] then return H.round_half(v, dtype) end
  return v
end

-- Leaves rounded as stored in dtype (the oracle must start from what the tensor holds).
function H.as_stored(t, dtype)
  if dtype ~= "float32" and not HALF[dtype] then return t end
  if type(t) == "number" then return H.stored(t, dtype) end
  local out = {}
  for i, v in ipairs(t) do out[i] = H.as_stored(v, dtype) end
  return out
end

-- The value of the 16 bits b of a float16 or bfloat16, from the format's definition.
function H.half_value(b, dtype)
  local f = HALF[dtype]
  local sign = b >= 0x8000 and -1 or 1
  local e, m = math.floor(b / 2 ^ f.mbits) % 2 ^ f.ebits, b % 2 ^ f.mbits
  if e == 2 ^ f.ebits - 1 then return m == 0 and sign * math.huge or 0 / 0 end
  if e == 0 then return sign * m * 2 ^ (f.emin - f.mbits) end
  return sign * (2 ^ f.mbits + m) * 2 ^ (e - 1 + f.emin - f.mbits)
end

-- The bit patterns of a float16 or bfloat16 tensor's elements in row-major order (little-endian).
function H.half_bits(t)
  local s = H.bits(t)
  local out = {}
  for i = 1, #s / 2 do out[i] = s:byte(2 * i - 1) + 256 * s:byte(2 * i) end
  return out
end

-- Every 16-bit pattern (0 to 0xffff), in a random order drawn from rng.
function H.every_half_pattern(rng)
  local all = {}
  for b = 0, 0xffff do all[b + 1] = b end
  for i = #all, 2, -1 do
    local j = rng:int(1, i)
    all[i], all[j] = all[j], all[i]
  end
  return all
end

-- A 1-d tensor of dtype (float16 or bfloat16) on dev holding the bit patterns given, written
-- through its data pointer (so that every pattern, NaNs with any payload too, can be made).
function H.from_half_bits(bits, dtype, dev)
  local x = cs.empty({ #bits }, { dtype = dtype, device = "cpu" })
  local p = ffi.cast("uint16_t *", x:data_ptr())
  for i, b in ipairs(bits) do p[i - 1] = b end
  require("cuscan.core").keep(x)  -- p points into x's storage
  return dev == "cuda" and x:cuda() or x
end

-- The position of a float16 or bfloat16 value among the format's values, counted from 0 (zeros
-- of both signs) outward, negative below 0; inf comes right after the largest finite value.
local function half_order(v, dtype)
  local f = HALF[dtype]
  local a = math.abs(v)
  local k
  if a == math.huge then
    k = (2 ^ f.ebits - 1) * 2 ^ f.mbits
  elseif a < 2 ^ f.emin then
    k = a / 2 ^ (f.emin - f.mbits)
  else
    local m, e = math.frexp(a)
    k = (e - 1 - f.emin + 1) * 2 ^ f.mbits + (2 * m - 1) * 2 ^ f.mbits
  end
  return v < 0 and -k or k
end

-- How many values of dtype (float32, float16 or bfloat16) lie between a and b, both values of it:
-- 0 when equal or both NaN, inf when one is NaN.
function H.ulps(a, b, dtype)
  if dtype == "float32" then return H.f32_ulps(a, b) end
  if a ~= a or b ~= b then return (a ~= a and b ~= b) and 0 or math.huge end
  return math.abs(half_order(a, dtype) - half_order(b, dtype))
end

-- Views that are not contiguous, each made from a tensor of its base shape (drops: the dims a
-- select takes away): a scan's x, and its mask, reset and outputs made the same way.
H.VIEWS = {
  { name = "transposed 6x5", base = { 6, 5 }, make = function(b) return b:transpose(1, 2) end },
  { name = "narrowed 7x9 -> 5x6", base = { 7, 9 }, make = function(b) return b:narrow(2, 2, 6):narrow(1, 2, 5) end },
  { name = "3-D with dims 1 and 3 swapped", base = { 3, 4, 5 }, make = function(b) return b:transpose(1, 3) end },
  { name = "selected middle of 4x5x6", base = { 4, 5, 6 }, make = function(b) return b:select(2, 3) end, drops = 1 },
  { name = "every other element (stride 2)", base = { 11, 2 }, make = function(b) return b:select(2, 2) end, drops = 1 },
  { name = "transposed narrow of 4x9x3", base = { 4, 9, 3 }, make = function(b) return b:narrow(2, 3, 5):transpose(2, 3) end },
}

-- The same values laid out as a row (dim 2 of 1xN), a column (dim 1 of Nx1) and the first column
-- of a wide tensor: a list of { kind, tensor, dim }. H.first_line reads a result's first line.
function H.line_layouts(values, dev, dtype)
  local row = cs.tensor({ values }, { device = dev, dtype = dtype })
  local col = cs.tensor(values, { device = dev, dtype = dtype }):reshape({ #values, 1 })
  return { { "row", row, 2 }, { "column", col, 1 }, { "column of a wide tensor", cs.cat({ col, col, col }, 2), 1 } }
end

function H.first_line(t, kind)
  if kind == "row" then return t:totable()[1] end
  local out = {}
  for i, r in ipairs(t:totable()) do out[i] = r[1] end
  return out
end

---------------------------------------------------------------------------------------------------
-- Checking results
---------------------------------------------------------------------------------------------------
-- Tolerances for a scan result of dtype odt along a line of len elements.
function H.tol(odt, op, len)
  len = math.max(len or 1, 1)
  if op == "lse" then
    -- each step of the float64 fold rounds once, to an ulp of the running value (inputs of up to
    -- 2^5 or so in the specs): a result near 0 keeps those absolute errors; a float32 result within
    -- 1e-6 (the contract), the 2-byte floats within their rounding
    if odt == "float64" then return 1e-14 * len, 1e-14 * len end
    if odt == "float32" then return 1e-6, 1e-12 end
  end
  if odt == "float64" then return 1e-12 * len, 1e-12 * len end
  -- an ulp of the output, relative (its rounding, or two devices' roundings a tie apart), and the
  -- least denormal
  if odt == "float16" then return 2 ^ -10, 2 ^ -24 end
  if odt == "bfloat16" then return 2 ^ -7, 2 ^ -133 end
  if op == "prod" then return math.max(2e-5, len * 1.5e-7), 1e-30 end
  return 2e-5, 2e-6 * len
end

-- Random scan input of a shape and dtype made by the library itself (seeded, on `dev`): bool about
-- half true, integers in [-1000, 1000] (cumprod: -1, 0, 1, 2), floats in [-1, 1) (cumprod: near 1,
-- so that long products stay finite).
function H.scan_input(shape, dtype, op, seed, dev)
  local base = cs.rand(shape, { seed = seed, dtype = "float64", device = dev })
  if dtype == "bool" then return base:lt(0.5) end
  if dtype == "int32" or dtype == "int64" then
    return op == "cumprod" and ((base * 3):to(dtype) - 1) or (base * 2000 - 1000):to(dtype)
  end
  if op == "cumprod" then return (base * 0.02 + 0.99):to(dtype) end
  return (base * 2 - 1):to(dtype)
end

-- A CUDA scan's result against the CPU's of the same values (a scan along `len` elements): integers
-- exactly, float32 within 1 ulp (both round a float64 prefix once, folded in other orders), the
-- other floats within H.tol.
function H.assert_scan_like_cpu(want, got, odtype, op, len)
  assert.equal(want.dtype, got.dtype)
  if odtype == "int32" or odtype == "int64" then
    assert.tensor_equal(want, got)
  elseif odtype == "float32" then
    assert.tensor_near(want, got, 2 ^ -23, 1e-12 * len)
  else
    local rtol, atol = H.tol(odtype, op == "cumprod" and "prod" or "sum", len)
    assert.tensor_near(want, got, rtol, atol)
  end
end

-- A poison value to pre-fill `out` with, per dtype.
function H.poison(dtype)
  if dtype == "float32" or dtype == "float64" or HALF[dtype] then return 0 / 0 end
  if dtype == "bool" then return true end
  return -777777
end

-- Integer results compared exactly: expected holds int64 cdata (or numbers).
function H.assert_int_equal(expected, actual)
  local want = cs.tensor(expected, { dtype = actual.dtype, device = actual.device })
  assert.same(want:shape(), actual:shape())
  local bad = want:numel() > 0 and actual:ne(want):sum() or 0
  if bad ~= 0 then
    local ef, af = H.flatten(expected), H.flatten(actual:totable())
    for i = 1, #ef do
      if tonumber(ef[i]) ~= af[i] then
        error(("%d of %d integer elements differ; first at flat index %d: expected %s, got %s"):format(
          bad, #ef, i, tostring(ef[i]), tostring(af[i])), 2)
      end
    end
    error(("%d integer elements differ"):format(bad), 2)
  end
end

-- Compares a scan result against the oracle's table, by dtype: integers exactly, the values of max
-- and min bit for bit (zeros with their signs), other floats within H.tol.
function H.assert_result(expected, actual, odt, op, len)
  if INT[odt] then
    H.assert_int_equal(expected, actual)
  elseif op == "max" or op == "min" then
    assert.tensor_equal(expected, actual, { strict = true })
  else
    local rtol, atol = H.tol(odt, op, len)
    assert.tensor_near(expected, actual, rtol, atol)
  end
end

-- The raw bytes of a tensor's values in row-major order (for bit-identity checks).
function H.bits(t)
  local c = t:cpu():contiguous()
  if c:numel() == 0 then return "" end
  local core = require("cuscan.core")
  local C, ch = core.C, core.check_tensor(c, "bits", "t")
  local size = core.DTYPE_SIZE[core.DTYPE[c.dtype]]
  local base = ffi.cast("uint8_t *", C.cs_tensor_host_data(ch)) + C.cs_tensor_offset(ch) * size
  local s = ffi.string(base, c:numel() * size)
  core.keep(c)  -- base points into c's storage
  return s
end

---------------------------------------------------------------------------------------------------
-- Random scan cases (for the fuzz and CPU-vs-CUDA specs)
---------------------------------------------------------------------------------------------------
local FUZZ_PAIRS = {
  sum = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" }, { "int32", "int32" },
          { "int32", "int64" }, { "int64", "int64" }, { "bool", "int64" }, { "bool", "int32" } },
  prod = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" }, { "int32", "int32" },
           { "int32", "int64" }, { "int64", "int64" } },
}
FUZZ_PAIRS.lse = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" } }
for _, half in ipairs({ "float16", "bfloat16" }) do
  for _, out in ipairs({ half, "float32", "float64" }) do
    table.insert(FUZZ_PAIRS.sum, { half, out })
    table.insert(FUZZ_PAIRS.prod, { half, out })
    table.insert(FUZZ_PAIRS.lse, { half, out })
  end
end
FUZZ_PAIRS.max = {}
for _, d in ipairs({ "float32", "float64", "float16", "bfloat16", "int32", "int64", "bool" }) do
  table.insert(FUZZ_PAIRS.max, { d, d })
end
FUZZ_PAIRS.min = FUZZ_PAIRS.max
H.FUZZ_PAIRS = FUZZ_PAIRS
local FUZZ_OPS = { "sum", "sum", "prod", "prod", "max", "min", "lse" }
H.FN = { sum = "cumsum", prod = "cumprod", max = "cummax", min = "cummin", lse = "logcumsumexp" }

-- A random case: a base shape of 1..max_dims dims (one length may reach max_len, the rest stay
-- small), at most `cap` elements, a view of it, a dim, op (sums and products twice as often as
-- max, min and logsumexp), dtypes, flags (reverse, exclusive, mask, reset) and the kind of out.
function H.random_case(rng, cap, max_dims, max_len)
  max_dims, max_len = max_dims or 5, max_len or 5000
  local c = {}
  local nd = rng:int(1, max_dims)
  local shape = {}
  local long = rng:bool(0.5) and rng:int(1, nd) or 0
  for d = 1, nd do
    if d == long then shape[d] = rng:int(0, max_len)
    else shape[d] = rng:bool(0.05) and 0 or rng:int(1, rng:bool(0.3) and 40 or 6) end
  end
  -- keep within the element cap by shrinking the largest dims
  while H.numel(shape) > cap do
    local big = 1
    for d = 2, nd do if shape[d] > shape[big] then big = d end end
    shape[big] = math.floor(shape[big] / 2)
  end
  c.base = shape
  c.view = rng:pick({ "none", "none", "transpose", "narrow", "select" })
  if c.view == "transpose" and nd < 2 then c.view = "none" end
  if c.view == "select" and nd < 2 then c.view = "none" end
  if c.view == "transpose" then
    c.d1 = rng:int(1, nd)
    repeat c.d2 = rng:int(1, nd) until c.d2 ~= c.d1
  elseif c.view == "narrow" then
    c.d1 = rng:int(1, nd)
    local size = shape[c.d1]
    c.start = size > 0 and rng:int(1, size) or 1
    c.length = rng:int(0, size - c.start + 1)
  elseif c.view == "select" then
    c.d1 = rng:int(1, nd)
    if shape[c.d1] == 0 then c.view = "none" else c.index = rng:int(1, shape[c.d1]) end
  end
  local xnd = nd - (c.view == "select" and 1 or 0)
  if xnd == 0 then c.dim = rng:pick({ 1, -1 })
  else
    c.dim = rng:int(1, xnd)
    if rng:bool(0.3) then c.dim = c.dim - xnd - 1 end
  end
  c.op = rng:pick(FUZZ_OPS)
  local pair = rng:pick(FUZZ_PAIRS[c.op])
  c.dtype, c.odtype = pair[1], pair[2]
  c.reverse, c.exclusive, c.masked, c.reset = rng:bool(0.5), rng:bool(0.5), rng:bool(0.5), rng:bool(0.3)
  -- out: none, a poisoned tensor, x itself, the case's view of a poisoned buffer (whose other
  -- elements must stay poisoned), or that view holding x's values and scanned in place
  c.out = rng:pick({ "new", "poisoned", "inplace", "view", "inplace view" })
  if c.dtype ~= c.odtype then
    if c.out == "inplace" then c.out = "poisoned" end
    if c.out == "inplace view" then c.out = "view" end
  end
  c.seed = rng:int(0, 2 ^ 31 - 2)
  return c
end

-- The view of the case applied to a tensor of the base shape.
function H.apply_view(c, t)
  if c.view == "transpose" then return t:transpose(c.d1, c.d2) end
  if c.view == "narrow" then return t:narrow(c.d1, c.start, c.length) end
  if c.view == "select" then return t:select(c.d1, c.index) end
  return t
end

function H.case_text(c)
  local v = c.view
  if v == "transpose" then v = ("transpose(%d, %d)"):format(c.d1, c.d2)
  elseif v == "narrow" then v = ("narrow(%d, %d, %d)"):format(c.d1, c.start, c.length)
  elseif v == "select" then v = ("select(%d, %d)"):format(c.d1, c.index) end
  return ("%s %s->%s base {%s} view %s dim %s%s%s%s%s out=%s seed=%d"):format(
    H.FN[c.op], c.dtype, c.odtype, table.concat(c.base, ", "), v, tostring(c.dim), c.reverse and " reverse" or "",
    c.exclusive and " exclusive" or "", c.masked and " masked" or "", c.reset and " reset" or "", c.out, c.seed)
end

-- Inputs for a case, built on the CPU from cuscan's own generator (values suited to dtype and
-- op), then viewed. Returns x, mask and reset (CPU; nil where the case has none).
function H.case_inputs(c)
  local base = cs.rand(c.base, { seed = c.seed, dtype = "float64", device = "cpu" })
  local x
  if c.dtype == "bool" then x = base:lt(0.5)
  elseif c.op == "max" or c.op == "min" then
    -- -4..3: ties everywhere; a NaN now and then in floats
    x = (base * 8):to("int32"):to(c.dtype) - 4
    if H.is_int_dtype[c.dtype] == nil then x = cs.where(base:gt(0.998), 0 / 0, x) end
  elseif c.dtype == "int32" or c.dtype == "int64" then
    -- products: odd values -3, -1, 1, 3 (never 0, so lines stay interesting); sums: -1000..999
    x = c.op == "prod" and ((base * 4):to(c.dtype) * 2 - 3) or (base * 2000 - 1000):to(c.dtype)
  elseif c.op == "prod" then x = (base * 0.5 + 0.75):to(c.dtype)
  elseif c.op == "lse" then x = (base * 40 - 20):to(c.dtype)
  else x = (base * 2 - 1):to(c.dtype) end
  local m = cs.rand(c.base, { seed = c.seed + 1, device = "cpu" }):lt(0.7)
  local r = cs.rand(c.base, { seed = c.seed + 2, device = "cpu" }):lt(0.1)
  x, m, r = H.apply_view(c, x), H.apply_view(c, m), H.apply_view(c, r)
  return x, c.masked and m or nil, c.reset and r or nil
end

-- Runs the case's scan on x (on x's device): returns the result tensor (and, for max and min, the
-- indices). Where out is a view of a poisoned buffer, checks that the scan wrote nothing outside
-- the view.
function H.run_case(c, x, mask, reset)
  local indexed = c.op == "max" or c.op == "min"
  local opts = { reverse = c.reverse, exclusive = c.exclusive, mask = mask, reset = reset,
                 dtype = not indexed and c.odtype or nil }
  local poison, buf, ibuf = H.poison(c.odtype), nil, nil
  local function outputs(v, i) if indexed then return { v, i } end return v end
  if c.out == "poisoned" then
    opts.out = outputs(cs.full(x:shape(), poison, { dtype = c.odtype, device = x.device }),
                       cs.full(x:shape(), -777, { dtype = "int64", device = x.device }))
  elseif c.out == "inplace" then
    x = x:clone()
    opts.out = outputs(x, cs.full(x:shape(), -777, { dtype = "int64", device = x.device }))
  elseif c.out == "view" or c.out == "inplace view" then
    buf = cs.full(c.base, poison, { dtype = c.odtype, device = x.device })
    ibuf = indexed and cs.full(c.base, -777, { dtype = "int64", device = x.device }) or nil
    local v = H.apply_view(c, buf)
    if c.out == "inplace view" then
      v:copy(x)
      x = v
    end
    opts.out = outputs(v, ibuf and H.apply_view(c, ibuf))
  end
  local y, i = cs[H.FN[c.op]](x, c.dim, opts)
  if opts.out then
    assert.is_true(rawequal(y, indexed and opts.out[1] or opts.out))
    if indexed then assert.is_true(rawequal(i, opts.out[2])) end
  end
  for _, bp in ipairs({ { buf, poison }, { ibuf, -777 } }) do
    local b, p = bp[1], bp[2]
    if b then
      local outside = cs.full(c.base, true, { device = x.device })
      H.apply_view(c, outside):fill(false)
      local changed = p ~= p and b:eq(b) or b:ne(p)
      local n = changed:logical_and(outside):sum()
      if n ~= 0 then error(("the scan wrote %d elements outside its out view"):format(n), 2) end
    end
  end
  return y, i
end

-- The length of the scanned dim of x for case c.
function H.case_len(c, x)
  if x:dim() == 0 then return 1 end
  return x:size(c.dim)
end

---------------------------------------------------------------------------------------------------
-- Device suites
---------------------------------------------------------------------------------------------------
-- With a second GPU, every "cuda" suite runs once more with GPU 1 as the default GPU: the body
-- still says "cuda", which then names GPU 1.
H.devices = { "cpu", "cuda" }
if cs.device_count() > 1 then H.devices[3] = "cuda:1" end

function H.no_cuda_reason()
  if cs.cuda_available() then return nil end
  return cs.cuda_unavailable_reason()
end

-- Makes device the default for each test of the calling describe block (env: the spec file's,
-- when called from a helper), and the previous default device and GPU again after it.
function H.default_device_each(device, env)
  env = env or getfenv(2)
  local was_dev, was_gpu
  env.before_each(function()
    was_dev, was_gpu = cs.default_device(), cs.default_gpu()
    cs.set_default_device(device)
  end)
  env.after_each(function()
    if was_gpu then cs.set_default_device("cuda:" .. was_gpu) end
    cs.set_default_device(was_dev)
  end)
end

-- The device as printed after a tensor's values: "cpu", or "cuda:N" with the GPU's index (the
-- default GPU's for "cuda").
function H.printed_device(dev)
  if dev == "cuda" then return "cuda:" .. cs.default_gpu() end
  return dev
end

-- describe(name .. " on <device>") for each device, handing the body the device and an `it` to
-- use: on a machine without CUDA, the CUDA `it`s become pending tests that give the reason.
-- CUDA describes carry the #cuda tag, those on a second GPU #multigpu as well.
function H.each_device(name, body)
  local env = getfenv(2)
  for _, dev in ipairs(H.devices) do
    local gpu = dev:match("^cuda:%d+$")
    local label = name .. " on " .. dev .. (dev == "cuda" and " #cuda" or gpu and " #cuda #multigpu" or "")
    env.describe(label, function()
      local it = env.it
      if dev == "cuda" and not cs.cuda_available() then
        local reason = H.no_cuda_reason()
        it = function(test_name)
          env.pending(test_name .. " (skipped: " .. reason .. ")")
        end
      end
      if gpu then H.default_device_each(dev, env) end
      body(gpu and "cuda" or dev, it)
    end)
  end
end

-- An `it` that runs when why is nil, else makes pending tests that give why (env: the spec file's,
-- when called from a helper).
-- nvcc, for specs that build a host-side check of kernel code (no GPU needed), or nil; the command is
-- run without the sanitizers `make asan` preloads into this process
H.CLEAN_ENV = "env -u LD_PRELOAD "
function H.nvcc()
  for _, p in ipairs({ os.getenv("NVCC") or "", "nvcc", "/usr/local/cuda/bin/nvcc" }) do
    if p ~= "" and os.execute(H.CLEAN_ENV .. p .. " --version >/dev/null 2>&1") == 0 then return p end
  end
end

function H.it_unless(why, env)
  env = env or getfenv(2)
  if why == nil then return env.it end
  return function(test_name) env.pending(test_name .. " (skipped: " .. why .. ")") end
end

-- An `it` for specs that need n GPUs: pending with the reason where there are fewer.
function H.gpus_it(n)
  local have = cs.device_count()
  local why = have == 0 and cs.cuda_unavailable_reason() or have < n and ("needs " .. n .. " GPUs, this machine has " .. have)
  return H.it_unless(why or nil, getfenv(2))
end

-- An `it` for CUDA-only specs: runs when a device is present, else pending with the reason.
function H.cuda_it()
  local env = getfenv(2)
  if cs.cuda_available() then return env.it end
  local reason = H.no_cuda_reason()
  return function(test_name)
    env.pending(test_name .. " (skipped: " .. reason .. ")")
  end
end

-- Calls fn (a closure written on one line) and checks its error: it starts with that line's
-- position and "cuscan: ", and contains every needle (plain text). Returns the message.
function H.raises(fn, needles)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error, the call succeeded")
  err = tostring(err)
  local info = debug.getinfo(fn, "S")
  local prefix = ("%s:%d: cuscan: "):format(info.short_src, info.linedefined)
  if err:sub(1, #prefix) ~= prefix then
    error(("the error should start with %q, got %q"):format(prefix, err), 2)
  end
  for _, needle in ipairs(needles or {}) do
    if not err:find(needle, 1, true) then
      error(("the error should mention %q: %q"):format(needle, err), 2)
    end
  end
  return err
end

-- A fresh temporary directory for each test of the calling describe block, handed to set before
-- the test and removed after it.
function H.temp_dir_each(set)
  local env = getfenv(2)
  local dir
  env.before_each(function()
    local p = io.popen("mktemp -d")
    dir = p:read("*l")
    p:close()
    set(dir)
  end)
  env.after_each(function() os.execute("rm -rf " .. H.quote(dir)) end)
end

-- Runs a shell command; returns its output and exit status.
function H.shell(cmd)
  local f = io.popen(cmd .. " 2>&1; echo \"__status=$?\"")
  local out = f:read("*a")
  f:close()
  local status = tonumber(out:match("__status=(%d+)%s*$"))
  out = out:gsub("__status=%d+%s*$", "")
  return out, status
end

-- The first python3 that imports numpy (Debian's python3-numpy may sit beside another python3 on
-- PATH), or nil.
function H.numpy_python()
  for _, py in ipairs({ "python3", "/usr/bin/python3" }) do
    local _, status = H.shell(py .. " -c 'import numpy' >/dev/null 2>&1")
    if status == 0 then return py end
  end
  return nil
end

-- The project root, absolute (specs run from it).
H.root = H.shell("pwd"):gsub("%s+$", "")

function H.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs a Lua chunk in a fresh luajit with cuscan on its path and the given environment
-- variables; returns its output and exit status. (A child process also gives back any device
-- memory its allocator keeps.)
function H.run_lua(chunk, env)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. H.quote(v) end
  if not (env and env.LUA_PATH) then
    parts[#parts + 1] = "LUA_PATH=" .. H.quote(("%s/lua/?.lua;%s/lua/?/init.lua;%s"):format(H.root, H.root, package.path))
  end
  return H.shell(("env %s luajit -e %s"):format(table.concat(parts, " "), H.quote(chunk)))
end

return H

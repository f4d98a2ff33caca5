-- The CPU's one-loop element-wise paths (src/cpu/ops.c). Comparisons of float tensors: float32
-- compares in float32, eight a vector; against a number (taken as a float32 first, as PyTorch and
-- NumPy take it), with the float next to it that keeps every answer (f32_threshold), the number
-- first through the mirrored op. float32 <-> float64
-- copies (x:to, y:copy(x)): one conversion loop. Every element is checked against plain Lua in
-- double precision reading the tensors' memory (bit for bit: NaN as NaN, -0.0 as -0.0): numbers
-- between floats, beyond float32's range, subnormal, signed zeros, infinities and NaN, inputs at
-- their float neighbours; odd sizes (several chunks of a thread), 2^24 elements, unaligned starts, narrowed, stride-2 and
-- transposed inputs; outputs poisoned first where the op takes one (copies into views, the C entry
-- point with the number first).
local cs = require("cuscan")
local ffi = require("ffi")
local H = require("spec.helpers")
local core = require("cuscan.core")
require("cuscan.assertions")

local CTYPE = { float32 = "float *", float64 = "double *", bool = "uint8_t *" }
local SIZE = { float32 = 4, float64 = 8, bool = 1 }

-- get(i): element i (0-based, in row-major order over t's shape) of a 1-d or 2-d t, from its memory
local function reader(t)
  local p = ffi.cast(CTYPE[t.dtype], t:data_ptr())
  local shape, stride = t:shape(), t:stride()
  if #shape == 1 then
    local s = stride[1]
    return function(i) return tonumber(p[i * s]) end
  end
  local cols, s1, s2 = shape[2], stride[1], stride[2]
  return function(i)
    local r = math.floor(i / cols)
    return tonumber(p[r * s1 + (i - r * cols) * s2])
  end
end

-- every element of y against ref(a(i), b(i)), the first mismatch reported. The loop is compiled
-- afresh for each check, so that LuaJIT traces it for this check's readers and oracle alone.
local CHECK = [[
local ref, a, b, get, n = ...
for i = 0, n - 1 do
  local want, got = ref(a(i), b and b(i)), get(i)
  if not (got == want and 1 / got == 1 / want) and not (got ~= got and want ~= want) then return i, got, want end
end
]]
local function check_all(y, ref, a, b, what)
  local i, got, want = assert(load(CHECK))(ref, a, b, reader(y), y:numel())
  if i then
    error(("%s: element %d of %d: got %s, want %s"):format(what, i, y:numel(), tostring(got), tostring(want)), 2)
  end
end

local CMP = {
  lt = function(a, b) return a < b and 1 or 0 end, le = function(a, b) return a <= b and 1 or 0 end,
  gt = function(a, b) return a > b and 1 or 0 end, ge = function(a, b) return a >= b and 1 or 0 end,
  eq = function(a, b) return a == b and 1 or 0 end, ne = function(a, b) return a ~= b and 1 or 0 end,
}
local NAMES = { "lt", "le", "gt", "ge", "eq", "ne" }

local FLT_MAX = (2 - 2 ^ -23) * 2 ^ 127
-- numbers on, between and beyond float32 values
local NUMBERS = { 0.5, 0.1, 1 / 3, -0.1, 1 + 2 ^ -30, 2 ^ 24 + 1, -(2 ^ 24 + 1), 1e300, -1e300, FLT_MAX,
  FLT_MAX * (1 + 2 ^ -30), -FLT_MAX * (1 + 2 ^ -30), 2 ^ -149, 2 ^ -150, 2 ^ -151, 3 * 2 ^ -150, -2 ^ -150, 0, -0.0,
  1 / 0, -1 / 0, 0 / 0 }

-- float32 values around every number (its neighbours once rounded), specials, and random ones, n in
-- all, in a float64 list
local function values(rng, n)
  local v = { 1 / 0, -1 / 0, 0 / 0, 0, -0.0, FLT_MAX, -FLT_MAX, 2 ^ -149, -2 ^ -149 }
  for _, s in ipairs(NUMBERS) do
    for _, f in ipairs({ 1, 1 + 2 ^ -24, 1 - 2 ^ -24, 1 + 2 ^ -23, 1 - 2 ^ -23, 1 + 2 ^ -22, 1 - 2 ^ -25 }) do
      v[#v + 1] = s * f
    end
  end
  local out = {}
  for i = 1, n do out[i] = v[i] or (rng:uniform() * 2 - 0.5) * 10 ^ rng:int(-3, 3) end
  for i = n, 2, -1 do -- shuffled, so that the specials land in every lane of a vector
    local j = rng:int(1, i)
    out[i], out[j] = out[j], out[i]
  end
  return out
end

local function tensor(rng, n, dtype)
  return cs.tensor(values(rng, n), { dtype = "float64", device = "cpu" }):to(dtype)
end

-- x as the view `how` of a fresh float tensor, n elements
local function view(rng, n, dtype, how)
  if how == "flat" then return tensor(rng, n, dtype) end
  if how == "unaligned" then return tensor(rng, n + 1, dtype):narrow(1, 2, n) end
  if how == "stride 2" then return tensor(rng, 2 * n, dtype):reshape({ n, 2 }):select(2, 2) end
  local cols = 67
  local rows = math.max(1, math.floor(n / cols))
  if how == "narrowed" then return tensor(rng, rows * (cols + 3), dtype):reshape({ rows, cols + 3 }):narrow(2, 2, cols) end
  return tensor(rng, rows * cols, dtype):reshape({ cols, rows }):transpose(1, 2) -- transposed
end

-- x op s through the C entry point, into a poisoned output; first: s op x
local function with_number(x, s, name, first)
  local y = cs.empty(x:shape(), { dtype = "bool", device = "cpu" })
  ffi.fill(y:data_ptr(), y:numel(), 7)
  core.call(name, core.C.cs_binary_scalar, core.check_tensor(y, name, "out"), core.check_tensor(x, name, "x"), s,
            core.C["CS_" .. name:upper()], first and 1 or 0)
  return y
end

local VIEWS = { "flat", "unaligned", "stride 2", "narrowed", "transposed" }

-- every combination of one value from each list, as a list of tables
local function product(lists, i, head, out)
  i, head, out = i or 1, head or {}, out or {}
  if i > #lists then
    out[#out + 1] = { unpack(head) }
    return out
  end
  for _, v in ipairs(lists[i]) do
    head[i] = v
    product(lists, i + 1, head, out)
  end
  return out
end

describe("comparisons of float tensors on the CPU", function()
  it("with numbers between, beyond and on float32 values, either side, match plain Lua", function()
    H.with_rng("cpu compare numbers", function(rng)
      for _, c in ipairs(product({ { "float32", "float64" }, { 1, 7, 1003 } })) do
        local dtype, n = c[1], c[2]
        local x = tensor(rng, n, dtype)
        for _, sc in ipairs(product({ NUMBERS, NAMES })) do
          local name = sc[2]
          local s = dtype == "float32" and H.f32(sc[1]) or sc[1]   -- the number in x's dtype
          local cmp, what = CMP[name], ("%s %s %s, %d"):format(dtype, name, tostring(sc[1]), n)
          check_all(x[name](x, sc[1]), function(a) return cmp(a, s) end, reader(x), nil, what)
          check_all(with_number(x, sc[1], name, true), function(a) return cmp(s, a) end, reader(x), nil, what .. " first")
        end
      end
    end)
  end)

  it("of two tensors and of views match plain Lua", function()
    H.with_rng("cpu compare views", function(rng)
      for _, c in ipairs(product({ { "float32", "float64" }, VIEWS, { 7, 1003, 40009 } })) do
        local dtype, how, n = c[1], c[2], c[3]
        local x = view(rng, n, dtype, how)
        local b = x:clone()
        b:narrow(1, 1, 1):fill(0.25) -- equal elements elsewhere, a different first row
        local other = view(rng, n, dtype, how)
        for _, name in ipairs(NAMES) do
          local what = ("%s %s %s, %d"):format(dtype, how, name, n)
          check_all(x[name](x, b), CMP[name], reader(x), reader(b), what .. " (equal)")
          check_all(x[name](x, other), CMP[name], reader(x), reader(other), what)
          local s = dtype == "float32" and H.f32(0.1) or 0.1
          check_all(x[name](x, 0.1), function(a) return CMP[name](a, s) end, reader(x), nil, what .. " 0.1")
        end
      end
    end)
  end)
end)

describe("float32 <-> float64 copies on the CPU", function()
  local PAIRS = { { "float32", "float64", function(a) return a end }, { "float64", "float32", H.f32 } }

  it("convert every element as C does, of odd sizes, 2^24 elements and views", function()
    H.with_rng("cpu convert", function(rng)
      for _, c in ipairs(product({ PAIRS, VIEWS })) do
        local pair, how = c[1], c[2]
        for _, n in ipairs(how == "flat" and { 1, 7, 1000003 } or { 7, 100003 }) do
          local x = view(rng, n, pair[1], how)
          if pair[1] == "float64" then x = x * 1e-30 * 1e-9 + x * 3 end -- subnormal float32 results too
          check_all(x:to(pair[2]), pair[3], reader(x), nil, ("%s -> %s %s, %d"):format(pair[1], pair[2], how, n))
        end
      end
      for _, pair in ipairs(PAIRS) do
        local shape = pair[1] == "float32" and { 4096, 4096 } or { 1024, 4096 }
        local big = cs.rand(shape, { seed = rng:next(), device = "cpu" }):to(pair[1]) * 3 - 1
        check_all(big:to(pair[2]), pair[3], reader(big), nil, pair[1] .. " large")
      end
    end)
  end)

  it("into poisoned views that start off any alignment", function()
    H.with_rng("cpu convert into views", function(rng)
      for _, c in ipairs(product({ PAIRS, { 5, 1003, 100003 } })) do
        local pair, n = c[1], c[2]
        local x = tensor(rng, n, pair[1])
        local y = cs.empty({ n + 3 }, { dtype = pair[2], device = "cpu" })
        ffi.fill(y:data_ptr(), (n + 3) * SIZE[pair[2]], 0x7f)
        local v = y:narrow(1, 2, n)
        v:copy(x)
        check_all(v, pair[3], reader(x), nil, ("%s -> %s into a view, %d"):format(pair[1], pair[2], n))
        local bytes = ffi.cast("uint8_t *", y:data_ptr())
        assert.equal(0x7f, bytes[0]) -- the elements around it untouched
        assert.equal(0x7f, bytes[(n + 1) * SIZE[pair[2]]])
      end
    end)
  end)
end)

-- cuscan.format: tostring(x). Values first, nested in brackets, then a line such as
-- "[cuscan float32 tensor 2x3, cuda]". Tensors of more than `threshold` (1000) elements are
-- summarised like numpy and torch do: along every dim longer than 2 * `edgeitems` (3) only the
-- first and last `edgeitems` entries are shown, with "..." between. Only those corners are read
-- (and, for CUDA tensors, moved to the host). cs.set_printoptions changes these settings, as
-- torch.set_printoptions does.
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local format, rep, concat = string.format, string.rep, table.concat
local type, tonumber, tostring, floor, abs, huge = type, tonumber, tostring, math.floor, math.abs, math.huge
local F64, I64, BOOL = core.F64, core.I64, core.BOOL
local CPU = core.CPU
local check_tensor = core.check_tensor

local fmt = {}

-- The settings, torch's names and profiles. precision nil: 4 digits for float32; for float64 at
-- least 4 and as many more as make every shown value read back as itself (0.1 + 0.2 shows as
-- 0.30000000000000004, not as 0.3000). sci_mode nil: scientific notation when the values need it.
local PROFILES = {
  default = { threshold = 1000, edgeitems = 3, linewidth = 80 },
  short = { precision = 2, threshold = 1000, edgeitems = 2, linewidth = 80 },
  full = { threshold = huge, edgeitems = 3, linewidth = 80 },
}
local opts = {}
for k, v in pairs(PROFILES.default) do opts[k] = v end

local PRINT_OPTS = { precision = true, threshold = true, edgeitems = true, linewidth = true, sci_mode = true,
                     profile = true }

local function check_count(v, name, least, most)
  if type(v) ~= "number" or v ~= floor(v) or v < least or (most and v > most) then
    core.raise(format("set_printoptions: %s: expected an integer >= %d%s, got %s", name, least,
                      most and " and <= " .. most or "", core.describe(v)))
  end
  return v
end

-- cs.set_printoptions{precision =, threshold =, edgeitems =, linewidth =, sci_mode =, profile =}:
-- as torch.set_printoptions, settings not named keep their values, except sci_mode, which every
-- call sets (to automatic when not named); profile ("default", "short" or "full") first resets
-- every setting to that profile's.
function fmt.set_printoptions(o)
  if o == nil then o = {} end
  core.check_opts(o, PRINT_OPTS, "set_printoptions")
  local new = {}   -- checked in full before any setting changes
  for k in pairs(PRINT_OPTS) do new[k] = opts[k] end
  if o.profile ~= nil then
    local p = PROFILES[o.profile]
    if not p then
      core.raise(format("set_printoptions: profile: expected \"default\", \"short\" or \"full\", got %s",
                        core.describe(o.profile)))
    end
    for k in pairs(PRINT_OPTS) do new[k] = p[k] end
  end
  -- string.format takes at most 99 digits
  if o.precision ~= nil then new.precision = check_count(o.precision, "precision", 0, 99) end
  if o.threshold ~= nil then
    new.threshold = o.threshold == huge and huge or check_count(o.threshold, "threshold", 0)
  end
  if o.edgeitems ~= nil then new.edgeitems = check_count(o.edgeitems, "edgeitems", 1) end
  if o.linewidth ~= nil then new.linewidth = check_count(o.linewidth, "linewidth", 1) end
  new.sci_mode = nil
  if o.sci_mode ~= nil then new.sci_mode = core.check_bool_opt(o.sci_mode, "set_printoptions", "sci_mode") end
  for k in pairs(PRINT_OPTS) do opts[k] = new[k] end
  opts.profile = nil
end

-- Digits after the point (or in the mantissa) for the finite values of a float tensor: the
-- precision setting; else 4, and for float64 more until every value reads back as itself.
local function float_digits(vals, dtype, sci)
  if opts.precision then return opts.precision end
  if dtype ~= F64 then return 4 end
  local most = sci and 16 or 24   -- 17 significant digits tell any two doubles apart
  for p = 4, most do
    local pat = sci and "%." .. p .. "e" or "%." .. p .. "f"
    local ok = true
    for _, v in ipairs(vals) do
      if v == v and v ~= huge and v ~= -huge and tonumber(format(pat, v)) ~= v then ok = false break end
    end
    if ok then return p end
  end
  return most
end

-- v with `digits` digits after the point in fixed (%f) or scientific (%e) notation, a value exactly
-- halfway rounded to even as C's printf, NumPy and PyTorch round it (LuaJIT's formatter rounds it
-- away from zero). A halfway double has few digits: 60 more than asked show all of them.
local function float_text(v, digits, sci)
  local conv = sci and "e" or "f"
  local s = format("%." .. digits .. conv, v)
  local sign, int, frac, exp = format("%." .. (digits + 60) .. conv, v):match("^(-?)(%d+)%.(%d*)(.*)$")
  if frac and frac:sub(digits + 1):match("^50*$") and tonumber((int .. frac:sub(1, digits)):sub(-1)) % 2 == 0 then
    s = sign .. int .. (digits > 0 and "." .. frac:sub(1, digits) or "") .. exp
  end
  return s
end

-- The corner tensor of the tensor x (its first and last `edge` entries along each long dim) on
-- the host, and which dims were cut.
local function corners(x, summarise)
  local M = core.methods
  local nd = core.ndim_of(check_tensor(x, "tostring", "x"))
  local cut = {}
  local c = x
  if summarise then
    local e = opts.edgeitems
    for d = 1, nd do
      local size = tonumber(C.cs_tensor_size(check_tensor(c, "tostring", "x"), d - 1))
      if size > 2 * e then
        cut[d] = true
        c = require("cuscan.ops").cat({ M.narrow(c, d, 1, e), M.narrow(c, d, size - e + 1, e) }, d)
      end
    end
  end
  if core.device_of(check_tensor(c, "tostring", "x")) ~= CPU then c = M.cpu(c) end
  return c, cut
end

-- Strings of the values of a host tensor in row-major order.
local function value_strings(t)
  local c = check_tensor(t, "tostring", "x")
  local dtype = core.dtype_of(c)
  local n = core.numel_of(c)
  local out = {}
  if n == 0 then return out end
  local data = require("cuscan.data")
  local p = ffi.cast(core.ELEM_PTR[dtype], C.cs_tensor_host_data(c)) + C.cs_tensor_offset(c)
  local read, rp = data.READ[dtype], data.read_ptr(c, dtype)  -- floats NaN-safe (see cuscan.data)
  local nd = core.ndim_of(c)
  local shape, strides = core.shape_of(c), core.strides_of(c)
  local offs = { 0 }
  for d = 1, nd do
    local nxt = {}
    for _, o in ipairs(offs) do
      for i = 0, shape[d] - 1 do nxt[#nxt + 1] = o + i * strides[d] end
    end
    offs = nxt
  end
  if dtype == BOOL then
    for i, o in ipairs(offs) do out[i] = p[o] ~= 0 and "true" or "false" end
  elseif dtype == I64 then
    for i, o in ipairs(offs) do out[i] = (tostring(p[o]):gsub("LL$", "")) end
  elseif core.IS_FLOAT[dtype] then
    local vals = {}
    local maxa, mina, integral, finite = 0, huge, true, false
    for i, o in ipairs(offs) do
      local v = read(rp, o)
      vals[i] = v
      if v == v and v ~= huge and v ~= -huge then
        finite = true
        local a = abs(v)
        if a > maxa then maxa = a end
        if a ~= 0 and a < mina then mina = a end
        if v ~= floor(v) then integral = false end
      end
    end
    local sci = opts.sci_mode
    if sci == nil then
      sci = not (integral and maxa < 1e8) and
            (maxa >= 1e8 or (mina ~= huge and (mina < 1e-4 or maxa / mina >= 1e3 and maxa >= 1e3)))
    end
    local style, digits
    if not finite then style = nil
    elseif integral and not sci then style = "int"
    else style, digits = "float", float_digits(vals, dtype, sci) end
    for i, v in ipairs(vals) do
      if v ~= v then out[i] = "nan"
      elseif v == huge then out[i] = "inf"
      elseif v == -huge then out[i] = "-inf"
      elseif style == "int" then out[i] = format("%.0f.", v)
      else out[i] = float_text(v, digits, sci) end
      if style == "int" and v == 0 and 1 / v < 0 then out[i] = "-0." end
    end
  else
    for i, o in ipairs(offs) do out[i] = format("%d", p[o]) end
  end
  core.keep(t)  -- p points into t's storage
  return out
end

local function render(strs, shape, cut, d, nd, base, strides, indent, width)
  local n = shape[d]
  if d == nd then
    local items = {}
    for i = 0, n - 1 do
      if cut[d] and i == opts.edgeitems then items[#items + 1] = rep(" ", width - 3) .. "..." end
      local s = strs[base + i * strides[d] + 1]
      items[#items + 1] = rep(" ", width - #s) .. s
    end
    local per_line = math.max(1, floor((opts.linewidth - indent - 2) / (width + 2)))
    local lines = {}
    for i = 1, #items, per_line do
      lines[#lines + 1] = concat(items, ", ", i, math.min(i + per_line - 1, #items))
    end
    return "[" .. concat(lines, ",\n" .. rep(" ", indent + 1)) .. "]"
  end
  local parts = {}
  for i = 0, n - 1 do
    if cut[d] and i == opts.edgeitems then parts[#parts + 1] = "..." end
    parts[#parts + 1] = render(strs, shape, cut, d + 1, nd, base + i * strides[d], strides, indent + 1, width)
  end
  return "[" .. concat(parts, "," .. rep("\n", nd - d) .. rep(" ", indent + 1)) .. "]"
end

-- The values part of tostring(x).
function fmt.values(x)
  local xh = check_tensor(x, "tostring", "x")
  local nd = core.ndim_of(xh)
  local n = core.numel_of(xh)
  local c, cut = corners(x, n > opts.threshold)
  local strs = value_strings(c)
  if nd == 0 then return strs[1] end
  if n == 0 then return "[]" end
  local shape = core.shape_of(check_tensor(c, "tostring", "x"))
  local strides, s = {}, 1
  for d = nd, 1, -1 do strides[d] = s; s = s * shape[d] end
  local width = 0
  for _, str in ipairs(strs) do if #str > width then width = #str end end
  if width < 3 and next(cut) then width = 3 end
  return render(strs, shape, cut, 1, nd, 0, strides, 0, width)
end

-- The last line: [cuscan float32 tensor 2x3, cuda]
function fmt.header(x)
  local xh = check_tensor(x, "tostring", "x", true)
  local dtype = core.DTYPE_NAME[core.dtype_of(xh)]
  local dev = core.DEVICE_NAME[core.device_of(xh)]
  local shape = core.shape_str(core.shape_of(xh))
  local freed = C.cs_tensor_is_released(xh) ~= 0 and ", freed" or ""
  return format("[cuscan %s tensor %s, %s%s]", dtype, shape, dev, freed)
end

function fmt.tostring(x)
  if C.cs_tensor_is_released(check_tensor(x, "tostring", "x", true)) ~= 0 then return fmt.header(x) end
  return fmt.values(x) .. "\n" .. fmt.header(x)
end

return fmt

-- cuscan.format: tostring(x). Values first, nested in brackets, then a line such as
-- "[cuscan float32 tensor 2x3, cuda]". Tensors of more than 1000 elements are summarised like
-- numpy does: along every dim longer than 6 only the first and last 3 entries are shown, with
-- "..." between. Only those corners are read (and, for CUDA tensors, moved to the host).
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local format, rep, concat = string.format, string.rep, table.concat
local tonumber, tostring, floor, abs, huge = tonumber, tostring, math.floor, math.abs, math.huge
local F32, F64, I64, BOOL = core.F32, core.F64, core.I64, core.BOOL
local CPU = core.CPU
local check_tensor = core.check_tensor

local fmt = {}
fmt.threshold = 1000   -- more elements than this: summarise
fmt.edge = 3           -- entries kept at each end of a summarised dim
fmt.line_width = 80

-- The corner tensor of the tensor x (its first and last `edge` entries along each long dim) on
-- the host, and which dims were cut.
local function corners(x, summarise)
  local M = core.methods
  local nd = core.ndim_of(check_tensor(x, "tostring", "x"))
  local cut = {}
  local c = x
  if summarise then
    local e = fmt.edge
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
  elseif dtype == F32 or dtype == F64 then
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
    local style
    if not finite then style = nil
    elseif integral and maxa < 1e8 then style = "int"
    elseif maxa >= 1e8 or (mina ~= huge and (mina < 1e-4 or maxa / mina >= 1e3 and maxa >= 1e3)) then style = "%.4e"
    else style = "%.4f" end
    for i, v in ipairs(vals) do
      if v ~= v then out[i] = "nan"
      elseif v == huge then out[i] = "inf"
      elseif v == -huge then out[i] = "-inf"
      elseif style == "int" then out[i] = format("%.0f.", v)
      else out[i] = format(style, v) end
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
      if cut[d] and i == fmt.edge then items[#items + 1] = rep(" ", width - 3) .. "..." end
      local s = strs[base + i * strides[d] + 1]
      items[#items + 1] = rep(" ", width - #s) .. s
    end
    local per_line = math.max(1, floor((fmt.line_width - indent - 2) / (width + 2)))
    local lines = {}
    for i = 1, #items, per_line do
      lines[#lines + 1] = concat(items, ", ", i, math.min(i + per_line - 1, #items))
    end
    return "[" .. concat(lines, ",\n" .. rep(" ", indent + 1)) .. "]"
  end
  local parts = {}
  for i = 0, n - 1 do
    if cut[d] and i == fmt.edge then parts[#parts + 1] = "..." end
    parts[#parts + 1] = render(strs, shape, cut, d + 1, nd, base + i * strides[d], strides, indent + 1, width)
  end
  return "[" .. concat(parts, "," .. rep("\n", nd - d) .. rep(" ", indent + 1)) .. "]"
end

-- The values part of tostring(x).
function fmt.values(x)
  local xh = check_tensor(x, "tostring", "x")
  local nd = core.ndim_of(xh)
  local n = core.numel_of(xh)
  local c, cut = corners(x, n > fmt.threshold)
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

-- cuscan.csv: 1-d and 2-d tensors as delimited text (.csv, .txt), as NumPy's savetxt and loadtxt
-- write and read them: one row per line (a 1-d tensor is one column), an optional header line, and
-- lines starting with # skipped. Floats are written with the fewest digits that read back as the
-- same value (so float64 round-trips bit for bit), integers exactly, NaN and infinities as nan, inf
-- and -inf. cuscan.files opens the files; this module turns lines into tensors and back.
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local format = string.format
local type, tonumber, tostring = type, tonumber, tostring
local F64, I32, I64, BOOL = core.F64, core.I32, core.I64, core.BOOL

local csv = {}

local function split(line, delim)
  local fields = {}
  if delim == nil then
    for w in line:gmatch("%S+") do fields[#fields + 1] = w end
    return fields
  end
  local pos = 1
  while true do
    local s, e = line:find(delim, pos, true)
    local field = line:sub(pos, s and s - 1 or #line):match("^%s*(.-)%s*$")
    fields[#fields + 1] = field
    if not s then break end
    pos = e + 1
  end
  return fields
end

---------------------------------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------------------------------
local INT_LIMIT = { [I32] = { -2147483648LL, 2147483647LL }, [I64] = { -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL } }

-- An integer literal as int64 (exact), or nil when it is not one or does not fit the dtype.
local function parse_int(s, dtype)
  local sign, digits = s:match("^([+-]?)(%d+)$")
  if not digits then return nil end
  local v = 0LL
  local lo, hi = INT_LIMIT[dtype][1], INT_LIMIT[dtype][2]
  for i = 1, #digits do
    local d = digits:byte(i) - 48
    -- v * 10 + d, building negative numbers downward so that the most negative one fits
    if sign == "-" then
      if v < (lo + d) / 10 then return nil end
      v = v * 10 - d
    else
      if v > (hi - d) / 10 then return nil end
      v = v * 10 + d
    end
  end
  return v
end

-- A decimal number, nan or inf as a Lua number, or nil. (LuaJIT's tonumber also reads hexadecimal,
-- which NumPy does not write or read.)
local function parse_float(s)
  if s:find("[xX]") then return nil end
  return tonumber(s)
end

local WORDS = { ["true"] = true, ["false"] = false, ["True"] = true, ["False"] = false }

-- Parses the lines read by next_line() (nil at the end) into a CPU tensor of dtype. opts: header
-- (the first line names the columns; the names are returned second) and delimiter (nil: runs of
-- whitespace). Errors name the line and column through bad(fmt, ...).
function csv.read(next_line, dtype, opts, bad)
  local delim = opts.delimiter
  local values, names = {}, nil
  local rows, cols = 0, nil
  local lineno = 0
  while true do
    local line = next_line()
    if not line then break end
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if opts.header and names == nil then
      names = split(line:gsub("^%s*#%s?", ""), delim)
    elseif line:match("^%s*$") or line:match("^%s*#") then
      -- blank lines and comments carry no values
    else
      local fields = split(line, delim)
      if cols == nil then cols = #fields
      elseif #fields ~= cols then
        bad("line %d: %d values, the rows before it have %d", lineno, #fields, cols)
      end
      for j, s in ipairs(fields) do
        local v
        if dtype == I32 or dtype == I64 then v = parse_int(s, dtype)
        elseif dtype == BOOL then
          v = WORDS[s]
          if v == nil then
            local x = parse_float(s)
            if x ~= nil then v = x ~= 0 end
          end
        else v = parse_float(s) end
        if v == nil then
          bad("line %d, column %d: %q is not %s", lineno, j, s,
              (dtype == I32 or dtype == I64) and ("an integer in " .. core.DTYPE_NAME[dtype] .. "'s range") or "a number")
        end
        values[#values + 1] = v
      end
      rows = rows + 1
    end
  end
  -- one column gives a 1-d tensor, as NumPy's loadtxt does; anything else rows x columns
  local shape = (cols == nil or cols == 1) and { rows } or { rows, cols }
  local written = core.written_as(dtype)
  local t = core.empty(shape, written, core.CPU, "load")
  local th = core.check_tensor(t, "load", "out")
  if #values > 0 then
    local p = ffi.cast(core.ELEM_PTR[written], C.cs_tensor_data(th))
    if dtype == BOOL then
      for i = 1, #values do p[i - 1] = values[i] and 1 or 0 end
    else
      for i = 1, #values do p[i - 1] = values[i] end
    end
    core.keep(t)
  end
  if written ~= dtype then t = core.methods.to(t, core.DTYPE_NAME[dtype]) end
  return t, names or (opts.header and {} or nil)
end

---------------------------------------------------------------------------------------------------
-- Writing
---------------------------------------------------------------------------------------------------
local f32box = ffi.new("float[1]")

-- The shortest text of `from` to `to` significant digits that reads back as v: same(number) says
-- whether a number read back is v (after the dtype's rounding). The nearest text of a length is
-- tried first, then its neighbours in the last digit: at a power of two the numbers that round to v
-- reach twice as far above it as below, so a neighbour may read back where the nearest does not.
local function shortest(v, same, from, to)
  for digits = from, to do
    local s = format("%." .. digits .. "g", v)
    if same(tonumber(s)) then return s end
    local m, e = format("%." .. (digits - 1) .. "e", v):match("^(-?[%d.]+)(e[-+]%d+)$")
    local step = 10 ^ -(digits - 1)
    for _, d in ipairs({ step, -step }) do
      local t = format("%." .. digits .. "g", tonumber(format("%." .. (digits - 1) .. "f", tonumber(m) + d) .. e))
      if same(tonumber(t)) then return t end
    end
  end
  return format("%." .. to .. "g", v)
end

local function float64_text(v)
  return shortest(v, function(r) return r == v end, 15, 17)
end

local function float32_text(v)
  return shortest(v, function(r) f32box[0] = r return f32box[0] == v end, 6, 9)
end

-- v rounded to nearest (ties to even) in a binary format of mbits fraction bits whose smallest
-- normal exponent is emin and largest finite value max: what loading a float16 / bfloat16 file
-- does to the double it parses.
local function round_to(v, emin, mbits, max)
  if v ~= v or v == 0 or v == math.huge or v == -math.huge then return v end
  local a = math.abs(v)
  local _, e = math.frexp(a)                      -- a in [2^(e-1), 2^e)
  local ulp = 2 ^ (math.max(e - 1, emin) - mbits)  -- (denormals: the smallest normal's ulp)
  local x = a / ulp
  local q = math.floor(x)
  if x - q > 0.5 or (x - q == 0.5 and q % 2 == 1) then q = q + 1 end
  local r = q * ulp
  if r > max then r = math.huge end
  return v < 0 and -r or r
end
local HALF = {
  [core.F16] = function(v) return round_to(v, -14, 10, 65504) end,
  [core.BF16] = function(v) return round_to(v, -126, 7, 3.3895313892515355e38) end,
}

local function number_text(v, dtype)
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  if dtype == F64 then return float64_text(v) end
  local round = HALF[dtype]
  if round then return shortest(v, function(r) return round(r) == v end, 1, 9) end
  return float32_text(v)
end

-- The lines of a 1-d or 2-d tensor (given as rows of values read by cuscan.data) through emit(line).
function csv.write(emit, rows, dtype, delim)
  for _, row in ipairs(rows) do
    local parts = {}
    for j, v in ipairs(type(row) == "table" and row or { row }) do
      if core.IS_FLOAT[dtype] then parts[j] = number_text(v, dtype)
      elseif dtype == BOOL then parts[j] = v and "1" or "0"
      else parts[j] = (tostring(v):gsub("LL$", "")) end
    end
    local ok, err = emit(table.concat(parts, delim) .. "\n")
    if not ok then return nil, err end
  end
  return true
end

return csv

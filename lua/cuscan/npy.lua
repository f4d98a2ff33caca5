-- cuscan.npy: NumPy's .npy format (format versions 1.0, 2.0 and 3.0), read and written in Lua over
-- the FFI. A file is the magic "\x93NUMPY", a version, the header's length (2 bytes in 1.0, 4 in
-- 2.0 and 3.0, little-endian), the header (a Python dict literal with descr, fortran_order and shape,
-- padded so that the data starts on a multiple of 64 bytes), then the elements in C or Fortran order.
-- cuscan.files opens the files; this module reads and writes what is in them.
local ffi = require("ffi")
local bit = require("bit")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local format, byte = string.format, string.byte
local type, tonumber, floor = type, tonumber, math.floor

local npy = {}

-- The element types cuscan reads and writes: the descr's type code (without its byte order) and
-- the dtype it is. One entry per dtype. NumPy has no bfloat16: an array of ml_dtypes' bfloat16 is
-- saved with the descr '<V2' (2-byte raw words), so cuscan writes bfloat16 so and reads every 2-byte
-- raw word as bfloat16; NumPy loads such a file as V2, which .view(ml_dtypes.bfloat16) makes
-- bfloat16 again.
local FORMATS = {
  { code = "f4", dtype = "float32" },
  { code = "f8", dtype = "float64" },
  { code = "i4", dtype = "int32" },
  { code = "i8", dtype = "int64" },
  { code = "b1", dtype = "bool" },
  { code = "f2", dtype = "float16" },
  { code = "V2", dtype = "bfloat16" },
}
local DTYPE_OF_CODE, CODE_OF_DTYPE = {}, {}
for _, f in ipairs(FORMATS) do
  DTYPE_OF_CODE[f.code] = f.dtype
  CODE_OF_DTYPE[f.dtype] = f.code
end

-- Names for codes that are not cuscan dtypes, for the error message.
local OTHER = {
  f16 = "float128", c8 = "complex64", c16 = "complex128", c32 = "complex256",
  O = "Python objects", O8 = "Python objects", i1 = "int8", i2 = "int16", u1 = "uint8", u2 = "uint16",
  u4 = "uint32", u8 = "uint64",
}

local MAGIC = "\147NUMPY"
local LITTLE = ffi.abi("le")

---------------------------------------------------------------------------------------------------
-- The header: a Python literal. Only what .npy headers hold is parsed: dicts, tuples, lists,
-- strings, integers, True, False and None.
---------------------------------------------------------------------------------------------------
local function parse_literal(s, bad)
  local pos = 1
  local function skip() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function items(close)
    local list = {}
    skip()
    while s:sub(pos, pos) ~= close do
      list[#list + 1] = value()
      skip()
      local c = s:sub(pos, pos)
      if c == "," then pos = pos + 1; skip()
      elseif c ~= close then bad("malformed header: expected ',' or '%s' at character %d of %q", close, pos, s) end
    end
    pos = pos + 1
    return list
  end
  value = function()
    skip()
    local c = s:sub(pos, pos)
    if c == "'" or c == '"' then
      local e = s:find(c, pos + 1, true)
      if not e then bad("malformed header: an unterminated string in %q", s) end
      local str = s:sub(pos + 1, e - 1)
      pos = e + 1
      return str
    elseif c == "(" or c == "[" then
      pos = pos + 1
      return { kind = c == "(" and "tuple" or "list", items = items(c == "(" and ")" or "]") }
    elseif c == "{" then
      pos = pos + 1
      local dict = { kind = "dict", keys = {} }
      skip()
      while s:sub(pos, pos) ~= "}" do
        local k = value()
        skip()
        if s:sub(pos, pos) ~= ":" then bad("malformed header: expected ':' at character %d of %q", pos, s) end
        pos = pos + 1
        if type(k) ~= "string" then bad("malformed header: a key that is not a string in %q", s) end
        dict.keys[#dict.keys + 1] = k
        dict[k] = value()
        skip()
        local d = s:sub(pos, pos)
        if d == "," then pos = pos + 1; skip()
        elseif d ~= "}" then bad("malformed header: expected ',' or '}' at character %d of %q", pos, s) end
      end
      pos = pos + 1
      return dict
    end
    local word = s:match("^[%w_+-]+", pos)
    if not word then bad("malformed header: unexpected %q at character %d of %q", c, pos, s) end
    pos = pos + #word
    if word == "True" then return true elseif word == "False" then return false
    elseif word == "None" then return { kind = "none" } end
    local digits = word:match("^(%-?%d+)L?$")   -- Python 2 wrote long sizes as 3L
    if not digits then bad("malformed header: unexpected %q in %q", word, s) end
    return { kind = "int", text = digits }
  end
  local v = value()
  skip()
  if pos <= #s then bad("malformed header: text after the dict in %q", s) end
  return v
end

-- The dtype, byte order, element size and shape a header describes; errors through bad(fmt, ...).
local function read_header(text, bad)
  local h = parse_literal(text, bad)
  if type(h) ~= "table" or h.kind ~= "dict" then bad("malformed header: expected a dict, got %q", text) end
  for _, k in ipairs(h.keys) do
    if k ~= "descr" and k ~= "fortran_order" and k ~= "shape" then
      bad("malformed header: unexpected key '%s' (expected descr, fortran_order and shape)", k)
    end
  end
  local descr, fortran, shape = h.descr, h.fortran_order, h.shape
  if descr == nil or fortran == nil or shape == nil then
    bad("malformed header: it needs descr, fortran_order and shape, got %q", text)
  end
  if type(descr) ~= "string" then
    bad("unsupported dtype: a structured dtype (fields %s) is not a cuscan dtype", text:match("'descr':%s*(%b[])") or "")
  end
  if type(fortran) ~= "boolean" then bad("malformed header: fortran_order is not True or False") end
  if type(shape) ~= "table" or shape.kind ~= "tuple" then bad("malformed header: shape is not a tuple") end
  local order, code = descr:match("^([<>|=]?)(.+)$")
  local dtype = DTYPE_OF_CODE[code]
  if not dtype then
    local other = OTHER[code]
    bad("unsupported dtype '%s'%s: cuscan reads %s", descr, other and " (" .. other .. ")" or "",
        "float32 (<f4), float64 (<f8), float16 (<f2), bfloat16 (<V2, as ml_dtypes writes it), int32 (<i4), " ..
        "int64 (<i8) and bool (|b1)")
  end
  local size = core.DTYPE_SIZE[core.DTYPE[dtype]]
  local dims = {}
  for i, d in ipairs(shape.items) do
    if type(d) ~= "table" or d.kind ~= "int" then bad("malformed header: shape[%d] is not an integer", i) end
    local n = tonumber(d.text)
    if n < 0 then bad("malformed header: shape[%d] is negative (%s)", i, d.text) end
    if #d.text > 18 or n >= 2 ^ 53 then
      bad("shape (%s) overflows: size %s is too large", (text:match("'shape':%s*%((.-)%)") or ""), d.text)
    end
    dims[i] = n
  end
  if #dims > core.MAX_DIMS then bad("%d dims: at most %d are supported", #dims, core.MAX_DIMS) end
  -- (the sizes other than 0 count too: a tensor of 0 elements still has to hold its shape)
  local numel, spanned = 1, 1
  for _, n in ipairs(dims) do
    numel = numel * n
    if n > 0 then spanned = spanned * n end
  end
  if spanned * size >= 2 ^ 62 then
    bad("shape (%s) overflows: its sizes multiply to %.0f elements of %d bytes", table.concat(dims, ", "), spanned, size)
  end
  local swap = size > 1 and ((order == ">" and LITTLE) or (order == "<" and not LITTLE))
  return { dtype = dtype, size = size, swap = swap, fortran = fortran, shape = dims, numel = numel,
           bytes = numel * size }
end

-- Reads the magic, version and header from the open file f; returns the header's description and the
-- byte offset of the data.
function npy.read_header(f, bad)
  local pre = f:read(8)
  if not pre or #pre < 8 or pre:sub(1, 6) ~= MAGIC then
    bad("not a .npy file (bad magic: expected \\x93NUMPY, found %q)", (pre or ""):sub(1, 6))
  end
  local major, minor = byte(pre, 7, 8)
  local len_bytes
  if major == 1 then len_bytes = 2
  elseif major == 2 or major == 3 then len_bytes = 4
  else bad("unsupported .npy format version %d.%d (1.0, 2.0 and 3.0 are known)", major, minor) end
  local lb = f:read(len_bytes)
  if not lb or #lb < len_bytes then bad("truncated header") end
  local len = 0
  for i = len_bytes, 1, -1 do len = len * 256 + byte(lb, i) end
  local text = f:read(len)
  if len > 0 and (not text or #text < len) then
    bad("truncated header: %d bytes announced, %d present", len, text and #text or 0)
  end
  text = text or ""
  -- format 3.0 allows UTF-8 in the header; the keys and values cuscan reads are ASCII either way
  local h = read_header(text:gsub("%s+$", ""), bad)
  h.data_offset = 6 + 2 + len_bytes + len
  return h
end

-- Strides (elements) of the data in the file: row-major, or column-major for Fortran order.
local function file_strides(h)
  local st, s = {}, 1
  local n = #h.shape
  for k = 1, n do
    local d = h.fortran and k or n + 1 - k
    st[d] = s
    s = s * math.max(h.shape[d], 1)
  end
  return st
end

-- Reverses the byte order of n elements of `size` bytes at p (a uint8_t *) in place.
local function swap_bytes(p, n, size)
  if size == 2 then
    for i = 0, 2 * n - 1, 2 do p[i], p[i + 1] = p[i + 1], p[i] end
  elseif size == 4 then
    local q = ffi.cast("int32_t *", p)
    for i = 0, n - 1 do q[i] = bit.bswap(q[i]) end
  elseif size == 8 then
    local q = ffi.cast("int32_t *", p)
    for i = 0, 2 * n - 1, 2 do q[i], q[i + 1] = bit.bswap(q[i + 1]), bit.bswap(q[i]) end
  end
end

local CHUNK = 16 * 1024 * 1024

-- Checks that the file holds exactly the data its header describes.
function npy.check_size(h, file_size, bad)
  local have = file_size - h.data_offset
  if have ~= h.bytes then
    bad("%s: the header's shape (%s) and dtype %s need %.0f bytes of data, the file has %.0f",
        have < h.bytes and "truncated data" or "a header that does not match the data",
        table.concat(h.shape, ", "), h.dtype, h.bytes, have)
  end
end

-- The array of a .npy file as a CPU tensor; f is positioned after the header (checked against the
-- file's size). The tensor has the file's layout: a Fortran-order array comes back as a
-- column-major view, as NumPy loads it.
function npy.read(f, h, bad)
  local dtype = core.DTYPE[h.dtype]
  local n = #h.shape
  -- read into a contiguous tensor of the file's order, then view it with the array's dims
  local order = {}
  for k = 1, n do order[k] = h.fortran and h.shape[n + 1 - k] or h.shape[k] end
  local t = core.empty(order, dtype, core.CPU, "load")
  local th = core.check_tensor(t, "load", "out")
  local p = ffi.cast("uint8_t *", C.cs_tensor_data(th))
  local done = 0
  while done < h.bytes do
    local want = math.min(CHUNK, h.bytes - done)
    local s, err = f:read(want)
    if not s then bad("cannot read the data: %s", err or "unexpected end of file") end
    ffi.copy(p + done, s, #s)
    done = done + #s
  end
  if h.swap then swap_bytes(p, h.numel, h.size) end
  core.keep(t)
  if not h.fortran or n < 2 then return t end
  return core.view(th, h.shape, file_strides(h), 0, "load")
end

-- The array of a .npy file mapped copy-on-write (cs_map_file): a CPU tensor whose pages are read
-- from the file when touched.
function npy.map(path, h, bad)
  if h.swap then
    bad("big-endian data cannot be memory-mapped (cuscan computes in the host's byte order); load it without mmap")
  end
  local st = file_strides(h)
  local SH, ST = core.SH, core.ST
  for k = 1, #h.shape do
    SH[k - 1] = h.shape[k]
    ST[k - 1] = st[k]
  end
  local out = ffi.new("cs_tensor *[1]")
  if C.cs_map_file(out, path, h.data_offset, h.bytes, core.DTYPE[h.dtype], #h.shape, SH, ST) ~= 0 then
    bad("%s", (core.last_error():gsub("^" .. path:gsub("%p", "%%%0") .. ": ", "")))
  end
  return core.wrap(out[0])
end

-- The header of an array of the given dtype name, shape and order, padded with spaces and a newline
-- so that the data starts on a multiple of 64 bytes; format 1.0 unless the header needs 2.0.
function npy.header(dtype, shape, fortran)
  local code = CODE_OF_DTYPE[dtype]
  local descr = (#code == 2 and code:sub(2) == "1" and "|" or (LITTLE and "<" or ">")) .. code
  local dims = #shape == 1 and shape[1] .. "," or table.concat(shape, ", ")
  local dict = format("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr, fortran and "True" or "False", dims)
  for major, len_bytes in ipairs({ 2, 4 }) do
    local pre = 6 + 2 + len_bytes
    local total = pre + #dict + 1
    local padded = total + (64 - total % 64) % 64
    local len = padded - pre
    if len < 2 ^ (8 * len_bytes) then
      local lb = {}
      for i = 1, len_bytes do lb[i] = string.char(floor(len / 256 ^ (i - 1)) % 256) end
      return MAGIC .. string.char(major, 0) .. table.concat(lb) .. dict .. string.rep(" ", len - #dict - 1) .. "\n"
    end
  end
end

-- Writes a contiguous CPU tensor t (handle th) to the open file f: header, then data in chunks.
-- Returns nil and the error of the failed write, if one fails.
function npy.write(f, t, th)
  local dtype = core.DTYPE_NAME[core.dtype_of(th)]
  local ok, err = f:write(npy.header(dtype, core.shape_of(th), false))
  if not ok then return nil, err end
  local bytes = core.numel_of(th) * core.DTYPE_SIZE[core.dtype_of(th)]
  local p = ffi.cast("const char *", C.cs_tensor_data(th))
  local done = 0
  while done < bytes do
    local n = math.min(CHUNK, bytes - done)
    ok, err = f:write(ffi.string(p + done, n))
    if not ok then return nil, err end
    done = done + n
  end
  core.keep(t)
  return true
end

return npy

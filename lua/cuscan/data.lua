-- cuscan.data: moving values between Lua and tensors: building a tensor from a nested table,
-- totable(), item(), and the CPU staging that CUDA tensors go through. CPU tensors are read and
-- written in place through their host pointer, offset and strides.
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local keep = core.keep
local raise, describe, format = core.raise, core.describe, string.format
local type, tonumber, floor, huge = type, tonumber, math.floor, math.huge
local cast = ffi.cast
local F32, F64, I32, I64, BOOL, F16, BF16 = core.F32, core.F64, core.I32, core.I64, core.BOOL, core.F16, core.BF16
local CPU = core.CPU
local ELEM_PTR = core.ELEM_PTR
local int64_ct = ffi.typeof("int64_t")
local uint64_ct = ffi.typeof("uint64_t")

local data = {}

-- Base pointer (at element 0 of the view) of a CPU tensor's handle, typed by its dtype.
local function host_ptr(t, dtype)
  local base = C.cs_tensor_host_data(t)
  return cast(ELEM_PTR[dtype], base) + C.cs_tensor_offset(t)
end
data.host_ptr = host_ptr

-- A CPU tensor with the tensor t's values: t itself when it already is one, else a copy.
local function on_host(t, fname)
  local th = core.check_tensor(t, fname, "x")
  if core.device_of(th) == CPU then return t end
  local dtype = core.dtype_of(th)
  local h = core.empty(core.shape_of(th), dtype, CPU, fname)
  core.call(fname, C.cs_copy, core.check_tensor(h, fname, "x"), th)
  return h
end
data.on_host = on_host

---------------------------------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------------------------------
-- Floats are read as bits (see core.read_f32 and core.read_f64): a NaN loaded straight from
-- memory keeps its payload, and LuaJIT reads some payloads as tagged values, not numbers. float16
-- and bfloat16 elements are bits in any case.
local read_f32, read_f64 = core.read_f32, core.read_f64
local u32_ptr = ffi.typeof("uint32_t *")

local READ = {
  [F32] = read_f32,
  [F64] = read_f64,
  [I32] = function(p, i) return p[i] end,
  [I64] = function(p, i) return tonumber(p[i]) end,
  [BOOL] = function(p, i) return p[i] ~= 0 end,
  [F16] = core.read_f16,
  [BF16] = core.read_bf16,
}
data.READ = READ

-- The pointer READ[dtype] takes: element 0 of a CPU tensor's handle (floats as bits).
local function read_ptr(t, dtype)
  local p = host_ptr(t, dtype)
  if dtype == F32 or dtype == F64 then return cast(u32_ptr, p) end  -- float16 and bfloat16: bits already
  return p
end
data.read_ptr = read_ptr

local function read_dims(p, read, shape, strides, d, nd, off)
  local n, s = shape[d], strides[d]
  local t = {}
  if d == nd then
    for i = 1, n do t[i] = read(p, off + (i - 1) * s) end
  else
    for i = 1, n do t[i] = read_dims(p, read, shape, strides, d + 1, nd, off + (i - 1) * s) end
  end
  return t
end

local function read_raw_int64(p, i) return p[i] end
local EXACT_OPTS = { exact = true }

-- The reader of a dtype under totable's and item's options: {exact = true} keeps int64 values as
-- int64_t cdata, which hold every value (Lua numbers are exact up to 2^53 only).
local function reader(dtype, opts, fname)
  if opts == nil then return READ[dtype] end
  core.check_opts(opts, EXACT_OPTS, fname)
  if core.check_bool_opt(opts.exact, fname, "exact") and dtype == I64 then return read_raw_int64 end
  return READ[dtype]
end

-- x:totable([{exact = true}]): a nested Lua table of the values (booleans for bool tensors; int64
-- values as Lua numbers, exact up to 2^53, or int64_t cdata with exact). A 0-d tensor gives its value.
function data.totable(x, opts)
  local read = reader(core.dtype_of(core.check_tensor(x, "totable", "x")), opts, "totable")
  local h = on_host(x, "totable")
  local hh = core.check_tensor(h, "totable", "x")
  local dtype = core.dtype_of(hh)
  local nd = core.ndim_of(hh)
  local out
  if nd == 0 then
    out = read(read_ptr(hh, dtype), 0)
  elseif core.numel_of(hh) == 0 then
    out = read_dims(nil, read, core.shape_of(hh), core.strides_of(hh), 1, nd, 0)
  else
    out = read_dims(read_ptr(hh, dtype), read, core.shape_of(hh), core.strides_of(hh), 1, nd, 0)
  end
  keep(h)
  return out
end

-- Element values in row-major order as a flat Lua array (for comparisons and printing). With
-- raw, int64 values stay int64 cdata (exact).
function data.flat(x, fname, raw)
  local h = on_host(x, fname)
  local hh = core.check_tensor(h, fname, "x")
  local dtype = core.dtype_of(hh)
  local read = (raw and dtype == I64) and read_raw_int64 or READ[dtype]
  local nd = core.ndim_of(hh)
  local n = core.numel_of(hh)
  local out = {}
  if n == 0 then return out end
  local p = read_ptr(hh, dtype)
  if nd == 0 then
    out[1] = read(p, 0)
    keep(h)
    return out
  end
  local shape, strides = core.shape_of(hh), core.strides_of(hh)
  local idx = {}
  for d = 1, nd do idx[d] = 0 end
  local off = 0
  local last, ls = shape[nd], strides[nd]
  local k = 0
  while true do
    for i = 0, last - 1 do
      k = k + 1
      out[k] = read(p, off + i * ls)
    end
    -- advance the outer dims like an odometer
    local d = nd - 1
    while d >= 1 do
      idx[d] = idx[d] + 1
      off = off + strides[d]
      if idx[d] < shape[d] then break end
      off = off - idx[d] * strides[d]
      idx[d] = 0
      d = d - 1
    end
    if d < 1 then break end
  end
  keep(h)
  return out
end

-- x:item([{exact = true}]): the value of a one-element tensor (an int64_t cdata for int64 with exact).
function data.item(x, opts)
  local xh = core.check_tensor(x, "item", "x")
  local read = reader(core.dtype_of(xh), opts, "item")
  local n = core.numel_of(xh)
  if n ~= 1 then
    raise(format("item: x: expected a tensor of one element, got %d elements (shape %s)", n,
                 core.shape_str(core.shape_of(xh))))
  end
  local h = on_host(x, "item")
  local hh = core.check_tensor(h, "item", "x")
  local dtype = core.dtype_of(hh)
  -- the single element sits at the offset whatever the strides are
  local v = read(read_ptr(hh, dtype), 0)
  keep(h)
  return v
end

---------------------------------------------------------------------------------------------------
-- Building from nested tables
---------------------------------------------------------------------------------------------------
local function path_str(path, depth)
  local parts = {}
  for i = 1, depth do parts[i] = "[" .. path[i] .. "]" end
  return table.concat(parts)
end

local function is_int64_cdata(v)
  return type(v) == "cdata" and (ffi.istype(int64_ct, v) or ffi.istype(uint64_ct, v))
end

-- Shape of a nested table and the kind of its leaves ("number" or "boolean"); errors name the
-- place of the first ragged or non-numeric entry.
local function infer(value, fname)
  local shape = {}
  local v = value
  while type(v) == "table" do
    shape[#shape + 1] = #v
    if #shape > core.MAX_DIMS then
      raise(format("%s: data: more than %d levels of nesting (at most %d dims are supported)",
                   fname, core.MAX_DIMS, core.MAX_DIMS))
    end
    v = v[1]
  end
  local nd = #shape
  local kind = nil
  local path = {}
  local function walk(t, depth)
    local n = #t
    if n ~= shape[depth] then
      raise(format("%s: ragged table at %s: expected %d elements, got %d", fname,
                   depth == 1 and "top level" or path_str(path, depth - 1), shape[depth], n))
    end
    for k in pairs(t) do
      if type(k) ~= "number" or k < 1 or k > n or k ~= floor(k) then
        raise(format("%s: data%s: expected a list, found key %s", fname, path_str(path, depth - 1), describe(k)))
      end
    end
    for i = 1, n do
      path[depth] = i
      local e = t[i]
      if depth < nd then
        if type(e) ~= "table" then
          raise(format("%s: ragged table at %s: expected a table of %d elements, got %s", fname,
                       path_str(path, depth), shape[depth + 1], describe(e)))
        end
        walk(e, depth + 1)
      else
        local te = type(e)
        if te == "table" then
          raise(format("%s: ragged table at %s: expected a number, got a table", fname, path_str(path, depth)))
        elseif te == "number" or te == "boolean" or is_int64_cdata(e) then
          local k = te == "boolean" and "boolean" or "number"
          if kind == nil then
            kind = k
          elseif kind ~= k then
            raise(format("%s: data%s: expected a %s like the elements before it, got %s", fname,
                         path_str(path, depth), kind, describe(e)))
          end
        else
          raise(format("%s: data%s: expected a number or boolean, got %s", fname, path_str(path, depth), describe(e)))
        end
      end
    end
  end
  if nd > 0 then walk(value, 1) else
    local te = type(value)
    if te == "number" or is_int64_cdata(value) then kind = "number"
    elseif te == "boolean" then kind = "boolean"
    else raise(format("%s: data: expected a nested table, a number or a boolean, got %s", fname, describe(value))) end
  end
  return shape, kind
end

-- Writes the leaves of a (checked) nested table into p in row-major order, each through
-- core.check_element.
local function writer(dtype, fname)
  local check = core.check_element
  return function(p, i, v) p[i] = check(v, dtype, fname, "data") end
end

local function fill_rows(t, depth, nd, p, k, write)
  if depth == nd then
    for i = 1, #t do
      write(p, k, t[i])
      k = k + 1
    end
    return k
  end
  for i = 1, #t do k = fill_rows(t[i], depth + 1, nd, p, k, write) end
  return k
end

-- cs.tensor(data[, opts]): booleans give a bool tensor; anything else is float32 unless
-- opts.dtype names another dtype. (torch.tensor({1, 2}) gives int64; cuscan keeps float32, its
-- default dtype, for every numeric table so that a table of whole numbers scans as floats do.)
function data.from_table(value, dtype, dev, fname)
  if core.is_tensor(value) then
    local vh = core.check_tensor(value, fname, "data")
    local h = core.empty_like(vh, dtype or core.dtype_of(vh), dev, fname)
    core.call(fname, C.cs_copy, core.check_tensor(h, fname, "data"), vh)
    return h
  end
  local shape, kind = infer(value, fname)
  if dtype == nil then dtype = (kind == "boolean") and BOOL or F32 end
  local written = core.written_as(dtype)
  local nd, n = core.parse_shape(shape, fname, "data")
  local h = core.empty_from_sh(nd, written, CPU, fname)
  local hh = core.check_tensor(h, fname, "data")
  if n > 0 then
    local p = host_ptr(hh, written)
    local write = writer(written, fname)
    if nd == 0 then write(p, 0, value) else fill_rows(value, 1, nd, p, 0, write) end
    keep(h)
  end
  if dev == CPU and written == dtype then return h end
  local d = core.empty_like(hh, dtype, dev, fname)
  core.call(fname, C.cs_copy, core.check_tensor(d, fname, "data"), hh)
  return d
end

return data

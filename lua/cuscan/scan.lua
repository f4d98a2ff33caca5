-- cuscan.scan: cumulative sums and products along any dim, with reverse, exclusive, mask, out and
-- an accumulation dtype. Every argument is checked here before C is called, so that a misuse is
-- an error that names the argument, and nothing the caller holds is written on an error.
local registry = debug.getregistry()
if registry["cuscan.scan"] then return registry["cuscan.scan"] end
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local tonumber, type = tonumber, type
local check_tensor, is_tensor, same_shape = core.check_tensor, core.is_tensor, core.same_shape
local F32, F64, I32, I64, BOOL = core.F32, core.F64, core.I32, core.I64, core.BOOL
local DTYPE_NAME, DEVICE_NAME = core.DTYPE_NAME, core.DEVICE_NAME
local SH, ST = core.SH, core.ST
local S_OOM = core.S_OOM

local SUM, PROD = tonumber(C.CS_SCAN_SUM), tonumber(C.CS_SCAN_PROD)
local REVERSE, EXCLUSIVE = tonumber(C.CS_SCAN_REVERSE), tonumber(C.CS_SCAN_EXCLUSIVE)
local NAMES = { [SUM] = "cumsum", [PROD] = "cumprod" }

-- input dtype -> the accumulation (output) dtypes the C core supports (see cs_scan in cuscan.h)
local PAIRS = {
  [SUM] = { [F32] = { [F32] = true, [F64] = true }, [F64] = { [F64] = true },
            [I32] = { [I32] = true, [I64] = true }, [I64] = { [I64] = true },
            [BOOL] = { [I32] = true, [I64] = true } },
  [PROD] = { [F32] = { [F32] = true, [F64] = true }, [F64] = { [F64] = true },
             [I32] = { [I32] = true, [I64] = true }, [I64] = { [I64] = true } },
}

local function pair_list(op, dtype)
  local names = {}
  for d in pairs(PAIRS[op][dtype]) do names[#names + 1] = DTYPE_NAME[d] end
  table.sort(names)
  return table.concat(names, " or ")
end

local SCAN_OPTS = { reverse = true, exclusive = true, mask = true, out = true, dtype = true }

-- A 1-D view of a 0-d tensor (C scans along an existing dim).
local function as_line(t, fname)
  SH[0] = 1
  ST[0] = 1
  return core.view_from_sh(t, 1, C.cs_tensor_offset(t), fname)
end

local function shape_text(t) return core.shape_str(core.shape_of(t)) end

local function scan(op, x, dim, opts, fname)
  local xh = check_tensor(x, fname, "x")
  local nd = C.cs_tensor_ndim(xh)
  if nd == 0 and dim ~= 1 and dim ~= -1 and core.is_int(dim) then
    raise(format("%s: dim: %d is out of range for a 0-d tensor (expected 1 or -1)", fname, dim))
  end
  local cdim = core.norm_dim(dim, nd == 0 and 1 or nd, fname)
  local dtype = tonumber(C.cs_tensor_dtype(xh))
  local dev = tonumber(C.cs_tensor_device(xh))
  local flags, mask, out, odtype = 0, nil, nil, nil
  if type(opts) ~= "nil" then
    core.check_opts(opts, SCAN_OPTS, fname)
    if core.check_bool_opt(opts.reverse, fname, "reverse") then flags = flags + REVERSE end
    if core.check_bool_opt(opts.exclusive, fname, "exclusive") then flags = flags + EXCLUSIVE end
    if opts.dtype ~= nil then odtype = core.parse_dtype(opts.dtype, fname) end
    mask, out = opts.mask, opts.out
  end
  if op == PROD and dtype == BOOL then
    raise(format("%s: x: bool tensors are not supported (convert first, e.g. x:to(\"int64\"))", fname))
  end
  if odtype == nil then
    odtype = (dtype == BOOL) and I64 or dtype
  elseif not PAIRS[op][dtype][odtype] then
    raise(format("%s: dtype: a %s input cannot accumulate into %s (supported: %s)", fname, DTYPE_NAME[dtype],
                 DTYPE_NAME[odtype], pair_list(op, dtype)))
  end
  local mh, oh = nil, nil
  if mask ~= nil then
    if not is_tensor(mask) then
      raise(format("%s: mask: expected a bool tensor, got %s", fname, describe(mask)))
    end
    mh = check_tensor(mask, fname, "mask")
    local mdt = tonumber(C.cs_tensor_dtype(mh))
    if mdt ~= BOOL then
      raise(format("%s: mask: expected a bool tensor, got %s (make one with a comparison such as x:gt(0))",
                   fname, DTYPE_NAME[mdt]))
    end
    local mdev = tonumber(C.cs_tensor_device(mh))
    if mdev ~= dev then
      raise(format("%s: mask: expected a tensor on x's device (%s), got one on %s", fname, DEVICE_NAME[dev], DEVICE_NAME[mdev]))
    end
    if not same_shape(mh, xh) then
      raise(format("%s: mask: expected x's shape %s, got %s", fname, shape_text(xh), shape_text(mh)))
    end
  end
  if out ~= nil then
    if not is_tensor(out) then
      raise(format("%s: out: expected a tensor, got %s", fname, describe(out)))
    end
    oh = check_tensor(out, fname, "out")
    local odev = tonumber(C.cs_tensor_device(oh))
    if odev ~= dev then
      raise(format("%s: out: expected a tensor on x's device (%s), got one on %s", fname, DEVICE_NAME[dev], DEVICE_NAME[odev]))
    end
    if not same_shape(oh, xh) then
      raise(format("%s: out: expected x's shape %s, got %s", fname, shape_text(xh), shape_text(oh)))
    end
    local have = tonumber(C.cs_tensor_dtype(oh))
    if have ~= odtype then
      raise(format("%s: out: expected dtype %s (the output dtype), got %s%s", fname, DTYPE_NAME[odtype], DTYPE_NAME[have],
                   PAIRS[op][dtype] and PAIRS[op][dtype][have] and format("; pass dtype = \"%s\" to accumulate in it", DTYPE_NAME[have]) or ""))
    end
    if C.cs_tensor_overlap(oh, xh) == 2 then
      raise(format("%s: out: overlaps x partially (only out = x itself, for an in-place scan, is allowed)", fname))
    end
    if mh ~= nil and C.cs_tensor_overlap(oh, mh) ~= 0 then
      raise(format("%s: out: must not overlap mask", fname))
    end
  else
    out = core.empty_like(xh, odtype, dev, fname)
    oh = check_tensor(out, fname, "out")
  end
  if nd == 0 then
    local cx, co = as_line(xh, fname), as_line(oh, fname)
    local cm = mh and as_line(mh, fname)
    core.call(fname, C.cs_scan, check_tensor(co, fname, "out"), check_tensor(cx, fname, "x"), 0, op, flags,
              cm and check_tensor(cm, fname, "mask") or nil)
    return out
  end
  local st = C.cs_scan(oh, xh, cdim, op, flags, mh)
  if st ~= 0 then
    if st == S_OOM then
      core.collect()
      st = C.cs_scan(oh, xh, cdim, op, flags, mh)
    end
    if st ~= 0 then core.fail(fname) end
  end
  return out
end

local S = {}

-- cs.cumsum(x, dim[, opts]) / x:cumsum(dim[, opts])
function S.cumsum(x, dim, opts) return scan(SUM, x, dim, opts, "cumsum") end
-- cs.cumprod(x, dim[, opts]) / x:cumprod(dim[, opts])
function S.cumprod(x, dim, opts) return scan(PROD, x, dim, opts, "cumprod") end

local M = core.methods
M.cumsum = S.cumsum
M.cumprod = S.cumprod

-- opts with key set to value, for the methods that fix one option. Giving that option as well is
-- an error unless it says the same (reverse = true on reverse_cumsum); a mask option beside the
-- mask argument never does.
local function merged(opts, key, value, fname)
  local o = { [key] = value }
  if type(opts) ~= "nil" then
    core.check_opts(opts, SCAN_OPTS, fname)
    for k, v in pairs(opts) do
      if k == key then
        if v ~= value or key == "mask" then
          raise(format("%s: opts: %s = %s contradicts %s (leave the option out)", fname, key,
                       type(v) == "boolean" and tostring(v) or describe(v), fname))
        end
      else
        o[k] = v
      end
    end
  end
  return o
end

-- x:reverse_cumsum(dim[, opts]): the cumsum from the end of the dim toward its start.
function M.reverse_cumsum(x, dim, opts)
  check_tensor(x, "reverse_cumsum", "x")
  return scan(SUM, x, dim, merged(opts, "reverse", true, "reverse_cumsum"), "reverse_cumsum")
end

-- x:masked_cumsum(mask, dim[, opts]): the cumsum where elements under a false mask count as 0.
function M.masked_cumsum(x, mask, dim, opts)
  check_tensor(x, "masked_cumsum", "x")
  if not is_tensor(mask) then
    raise(format("masked_cumsum: mask: expected a bool tensor, got %s", describe(mask)))
  end
  return scan(SUM, x, dim, merged(opts, "mask", mask, "masked_cumsum"), "masked_cumsum")
end

S.scan = scan
registry["cuscan.scan"] = S
return S

-- cuscan.scan: cumulative sums and products along any dim, with reverse, exclusive, mask, out and
-- an accumulation dtype. Every argument is checked here before C is called, so that a misuse is
-- an error that names the argument, and nothing the caller holds is written on an error.
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local tonumber, type = tonumber, type
local check_tensor, is_tensor, same_shape = core.check_tensor, core.is_tensor, core.same_shape
local I64, BOOL = core.I64, core.BOOL
local DTYPE_NAME, DEVICE_NAME = core.DTYPE_NAME, core.DEVICE_NAME
local SH, ST = core.SH, core.ST
local S_OOM = core.S_OOM

local SUM, PROD = tonumber(C.CS_SCAN_SUM), tonumber(C.CS_SCAN_PROD)
local REVERSE, EXCLUSIVE = tonumber(C.CS_SCAN_REVERSE), tonumber(C.CS_SCAN_EXCLUSIVE)
local NAMES = { [SUM] = "cumsum", [PROD] = "cumprod" }

-- op -> input dtype -> the accumulation (output) dtypes the C core supports: its one list of pairs
-- (src/dtypes.h), asked through cs_scan_supported
local PAIRS = { [SUM] = {}, [PROD] = {} }
for op, by_input in pairs(PAIRS) do
  for input in pairs(DTYPE_NAME) do
    by_input[input] = {}
    for output in pairs(DTYPE_NAME) do
      if C.cs_scan_supported(op, input, output) ~= 0 then by_input[input][output] = true end
    end
  end
end

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

-- The checked arguments of a scan (C's out, x, dim, op, flags, mask), without running it. With
-- `explain`, a missing out is not made (cs_scan_explain describes the one it would be).
local function prepare(op, x, dim, opts, fname, explain)
  local xh = check_tensor(x, fname, "x")
  local nd = core.ndim_of(xh)
  if nd == 0 and dim ~= 1 and dim ~= -1 and core.is_int(dim) then
    raise(format("%s: dim: %d is out of range for a 0-d tensor (expected 1 or -1)", fname, dim))
  end
  local cdim = core.norm_dim(dim, nd == 0 and 1 or nd, fname)
  local dtype = core.dtype_of(xh)
  local dev = core.device_of(xh)
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
    local mdt = core.dtype_of(mh)
    if mdt ~= BOOL then
      raise(format("%s: mask: expected a bool tensor, got %s (make one with a comparison such as x:gt(0))",
                   fname, DTYPE_NAME[mdt]))
    end
    local mdev = core.device_of(mh)
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
    local odev = core.device_of(oh)
    if odev ~= dev then
      raise(format("%s: out: expected a tensor on x's device (%s), got one on %s", fname, DEVICE_NAME[dev], DEVICE_NAME[odev]))
    end
    if not same_shape(oh, xh) then
      raise(format("%s: out: expected x's shape %s, got %s", fname, shape_text(xh), shape_text(oh)))
    end
    local have = core.dtype_of(oh)
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
  elseif not explain then
    out = core.empty_like(xh, odtype, dev, fname)
    oh = check_tensor(out, fname, "out")
  end
  return out, oh, xh, nd, cdim, flags, mh, odtype
end

local function scan(op, x, dim, opts, fname)
  local out, oh, xh, nd, cdim, flags, mh = prepare(op, x, dim, opts, fname)
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

-- cs.explain(x, dim[, opts]): the plan a scan with these arguments would run, as one line (the
-- device, kernel family and mode, layout, tile and grid); opts as for cumsum, plus op = "cumprod".
local EXPLAIN_OPTS = { op = true }
for k in pairs(SCAN_OPTS) do EXPLAIN_OPTS[k] = true end
local explain_buf = require("ffi").new("char[512]")

function S.explain(x, dim, opts)
  local op, scan_opts = SUM, opts
  if opts ~= nil then
    core.check_opts(opts, EXPLAIN_OPTS, "explain")
    if opts.op ~= nil then
      if opts.op == "cumprod" then op = PROD
      elseif opts.op ~= "cumsum" then
        raise(format("explain: op: expected \"cumsum\" or \"cumprod\", got %s", describe(opts.op)))
      end
      scan_opts = {}
      for k, v in pairs(opts) do if k ~= "op" then scan_opts[k] = v end end
    end
  end
  local _, oh, xh, nd, cdim, flags, mh, odtype = prepare(op, x, dim, scan_opts, "explain", true)
  if nd == 0 then return "0-d tensor: one element, copied" end
  if C.cs_scan_explain(explain_buf, 512, xh, cdim, op, flags, mh, oh, odtype) ~= 0 then core.fail("explain") end
  return require("ffi").string(explain_buf)
end

-- cs.force_family(name): for tests and diagnosis, CUDA scans use this kernel family (and mode) where
-- it can handle the call, as CUSCAN_FORCE_FAMILY does; nil gives the choice back to the planner.
function S.force_family(name)
  if type(name) ~= "nil" and type(name) ~= "string" then   -- (a NULL cdata compares equal to nil)
    raise(format("force_family: name: expected a family name such as \"slabs\" or nil, got %s", describe(name)))
  end
  if C.cs_scan_force_family(name) ~= 0 then core.fail("force_family") end
end

S.scan = scan
return S

-- cuscan.scan: cumulative sums, products, maxima and minima (with indices) and log-sum-exps along any
-- dim, with reverse, exclusive, mask, reset (segmented scans), initial values, out and an accumulation
-- dtype. Every argument is checked before the scan runs (here, or by C before it writes anything), so
-- that a misuse is an error that names the argument, and nothing the caller holds is written on an error.
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local tonumber, type = tonumber, type
local check_tensor, is_tensor, same_shape = core.check_tensor, core.is_tensor, core.same_shape
local F64, I64, BOOL = core.F64, core.I64, core.BOOL
local DTYPE_NAME, DEVICE_NAME = core.DTYPE_NAME, core.DEVICE_NAME
local SH, ST = core.SH, core.ST
local S_OOM = core.S_OOM
local ffi = require("ffi")
local segs = require("cuscan.segments")

local SUM, PROD, MAX, MIN, LSE = tonumber(C.CS_SCAN_SUM), tonumber(C.CS_SCAN_PROD), tonumber(C.CS_SCAN_MAX),
                                  tonumber(C.CS_SCAN_MIN), tonumber(C.CS_SCAN_LOGSUMEXP)
local REVERSE, EXCLUSIVE = tonumber(C.CS_SCAN_REVERSE), tonumber(C.CS_SCAN_EXCLUSIVE)
local NAMES = { [SUM] = "cumsum", [PROD] = "cumprod", [MAX] = "cummax", [MIN] = "cummin", [LSE] = "logcumsumexp" }
local OP_OF = {}
for op, name in pairs(NAMES) do OP_OF[name] = op end

-- op -> input dtype -> the accumulation (output) dtypes the C core supports: its one list of pairs
-- (src/dtypes.h), asked through cs_scan_supported
local PAIRS = {}
for op in pairs(NAMES) do
  local by_input = {}
  PAIRS[op] = by_input
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

-- The options of each op: cummax and cummin keep x's dtype and write values and indices.
-- (cummax and cummin name initial only to refuse it with a reason.)
local SCAN_OPTS = { reverse = true, exclusive = true, mask = true, out = true, dtype = true, reset = true,
                    segments = true, initial = true }
local MAXMIN_OPTS = { reverse = true, exclusive = true, mask = true, out = true, reset = true, segments = true,
                      initial = true }
local OPTS_OF = { [SUM] = SCAN_OPTS, [PROD] = SCAN_OPTS, [MAX] = MAXMIN_OPTS, [MIN] = MAXMIN_OPTS, [LSE] = SCAN_OPTS }

-- A 1-D view of a 0-d tensor (C scans along an existing dim).
local function as_line(t, fname)
  SH[0] = 1
  ST[0] = 1
  return core.view_from_sh(t, 1, C.cs_tensor_offset(t), fname)
end

local function shape_text(t) return core.shape_str(core.shape_of(t)) end

-- The handle of a tensor option that goes with x (mask, reset, segments, out): a tensor on x's
-- device of x's shape; `what` says what it should be ("a bool tensor").
local function check_operand(v, xh, fname, argname, what)
  if not is_tensor(v) then raise(format("%s: %s: expected %s, got %s", fname, argname, what, describe(v))) end
  local h = check_tensor(v, fname, argname)
  local dev, have = core.device_of(xh), core.device_of(h)
  if have ~= dev then
    raise(format("%s: %s: expected a tensor on x's device: %s is on %s, x on %s", fname, argname, argname,
                 DEVICE_NAME[have], DEVICE_NAME[dev]))
  end
  if not same_shape(h, xh) then
    raise(format("%s: %s: expected x's shape %s, got %s", fname, argname, shape_text(xh), shape_text(h)))
  end
  return h
end

local function check_bool_operand(v, xh, fname, argname, hint)
  local h = check_operand(v, xh, fname, argname, "a bool tensor")
  local dt = core.dtype_of(h)
  if dt ~= BOOL then raise(format("%s: %s: expected a bool tensor, got %s (%s)", fname, argname, DTYPE_NAME[dt], hint)) end
  return h
end

-- The initial values (opts.initial) as a tensor and its handle: a tensor as given (C checks its
-- shape, dtype and device), or a number broadcast to every line as a tensor of the line shape (x's
-- without dim) in the accumulation dtype, float64 for float scans and int64 for the others.
local function initial_operand(v, xh, cdim, fname)
  if is_tensor(v) then return v, check_tensor(v, fname, "initial") end
  local int64 = type(v) == "cdata" and ffi.istype("int64_t", v)
  if type(v) ~= "number" and not int64 then
    raise(format("%s: initial: expected a tensor or a number, got %s", fname, describe(v)))
  end
  local dtype = core.dtype_of(xh)
  local acc = core.IS_FLOAT[dtype] and F64 or I64
  if acc == I64 and not int64 and not core.is_int(v) then
    raise(format("%s: initial: expected an integer (x is %s), got %s", fname, DTYPE_NAME[dtype], describe(v)))
  end
  local value = core.check_element(v, acc, fname, "initial")
  local shape = core.shape_of(xh)
  if #shape > 0 then table.remove(shape, cdim + 1) end
  local t = core.empty(shape, acc, core.device_of(xh), fname)
  local th = check_tensor(t, fname, "initial")
  if acc == F64 then core.call(fname, C.cs_fill, th, value) else core.call(fname, C.cs_fill_int64, th, value) end
  return t, th
end

-- The values output (out, or out[1] for cummax and cummin): odtype, and out = x or apart from x.
local function check_out(out, xh, odtype, op, dtype, fname, argname)
  local oh = check_operand(out, xh, fname, argname, "a tensor")
  local have = core.dtype_of(oh)
  if have ~= odtype then
    local hint = ""
    if OPTS_OF[op].dtype and PAIRS[op][dtype][have] then
      hint = format("; pass dtype = \"%s\" to accumulate in it", DTYPE_NAME[have])
    end
    raise(format("%s: %s: expected dtype %s (the output dtype), got %s%s", fname, argname, DTYPE_NAME[odtype],
                 DTYPE_NAME[have], hint))
  end
  if C.cs_tensor_overlap(oh, xh) == 2 then
    raise(format("%s: %s: overlaps x partially (only out = x itself, for an in-place scan, is allowed)", fname, argname))
  end
  return oh
end

-- The checked arguments of a scan, without running it, as a table: x, out and the other operands
-- as handles (xh, oh, mh, rh, ih, nh: initial), the tensors returned (out, indices), the 0-based dim
-- and the flags. With `explain`, missing outputs are not made (cs_scan_explain_with describes the ones it
-- would be) and segment ids become an unfilled reset of the layout the real one would have.
local function prepare(op, x, dim, opts, fname, explain)
  local xh = check_tensor(x, fname, "x")
  local nd = core.ndim_of(xh)
  if nd == 0 and dim ~= 1 and dim ~= -1 and core.is_int(dim) then
    raise(format("%s: dim: %.0f is out of range for a 0-d tensor (expected 1 or -1)", fname, dim))
  end
  local a = { xh = xh, nd = nd, cdim = core.norm_dim(dim, nd == 0 and 1 or nd, fname), flags = 0 }
  local dtype = core.dtype_of(xh)
  local dev = core.device_of(xh)
  local mask, out, reset, segments, odtype, reverse, initial
  if type(opts) ~= "nil" then
    core.check_opts(opts, OPTS_OF[op], fname)
    reverse = core.check_bool_opt(opts.reverse, fname, "reverse")
    if reverse then a.flags = a.flags + REVERSE end
    if core.check_bool_opt(opts.exclusive, fname, "exclusive") then a.flags = a.flags + EXCLUSIVE end
    if opts.dtype ~= nil then odtype = core.parse_dtype(opts.dtype, fname) end
    mask, out, reset, segments, initial = opts.mask, opts.out, opts.reset, opts.segments, opts.initial
  end
  if op == PROD and dtype == BOOL then
    raise(format("%s: x: bool tensors are not supported (convert first, e.g. x:to(\"int64\"))", fname))
  end
  if op == LSE and not core.IS_FLOAT[dtype] then
    raise(format("%s: x: expected a float tensor (float32, float64, float16 or bfloat16), got %s (convert first, " ..
                 "e.g. x:to(\"float32\"))", fname, DTYPE_NAME[dtype]))
  end
  if odtype == nil then
    odtype = (dtype == BOOL and (op == SUM or op == PROD)) and I64 or dtype
  elseif not PAIRS[op][dtype][odtype] then
    raise(format("%s: dtype: a %s input cannot accumulate into %s (supported: %s)", fname, DTYPE_NAME[dtype],
                 DTYPE_NAME[odtype], pair_list(op, dtype)))
  end
  a.odtype = odtype
  if mask ~= nil then
    a.mh = check_bool_operand(mask, xh, fname, "mask", "make one with a comparison such as x:gt(0)")
  end
  if reset ~= nil then
    if segments ~= nil then
      raise(format("%s: opts: give reset or segments, not both (segments are turned into a reset)", fname))
    end
    a.rh = check_bool_operand(reset, xh, fname, "reset",
                              "make one with a comparison, or give segment ids as opts.segments")
  elseif segments ~= nil then
    local sh = check_operand(segments, xh, fname, "segments", "an int32 or int64 tensor of segment ids")
    segs.check_ids(sh, fname, "segments")
    if explain then
      a.reset = core.empty_like(sh, BOOL, dev, fname)
    else
      a.reset = segs.reset_of(sh, nd == 0 and 0 or a.cdim, reverse, fname)
    end
    a.rh = check_tensor(a.reset, fname, "reset")
  end
  local indexed = op == MAX or op == MIN
  if initial ~= nil then
    if indexed then
      raise(format("%s: initial: not supported for cummax / cummin (they have no index to give a carried value)", fname))
    end
    a.initial, a.nh = initial_operand(initial, xh, nd == 0 and 0 or a.cdim, fname)
  end
  if out ~= nil then
    if indexed then
      if type(out) ~= "table" or is_tensor(out) or out[1] == nil or out[2] == nil then
        raise(format("%s: out: expected a table {values, indices} of two tensors, got %s", fname, describe(out)))
      end
      a.oh = check_out(out[1], xh, odtype, op, dtype, fname, "out[1]")
      a.ih = check_operand(out[2], xh, fname, "out[2]", "an int64 tensor for the indices")
      local idt = core.dtype_of(a.ih)
      if idt ~= I64 then
        raise(format("%s: out[2]: expected an int64 tensor for the indices, got %s", fname, DTYPE_NAME[idt]))
      end
      a.out, a.indices = out[1], out[2]
    else
      a.oh = check_out(out, xh, odtype, op, dtype, fname, "out")
      a.out = out
    end
    if a.mh ~= nil and C.cs_tensor_overlap(a.oh, a.mh) ~= 0 then
      raise(format("%s: out: must not overlap mask", fname))
    end
  elseif not explain then
    a.out = core.empty_like(xh, odtype, dev, fname)
    a.oh = check_tensor(a.out, fname, "out")
    if indexed then
      a.indices = core.empty_like(xh, I64, dev, fname)
      a.ih = check_tensor(a.indices, fname, "indices")
    end
  end
  return a
end

local ARGS = ffi.new("cs_scan_args")

-- cs_scan_with on the prepared arguments; a 0-d tensor is scanned as a line of one.
local function run(op, a, fname)
  local xh, oh, mh, rh, ih, cdim = a.xh, a.oh, a.mh, a.rh, a.ih, a.cdim
  if a.nd == 0 then
    local line = function(h, name) return h and check_tensor(as_line(h, fname), fname, name) end
    xh, oh, mh, rh, ih = line(xh, "x"), line(oh, "out"), line(mh, "mask"), line(rh, "reset"), line(ih, "indices")
    cdim = 0
  end
  ARGS.flags, ARGS.mask, ARGS.reset, ARGS.indices, ARGS.initial = a.flags, mh, rh, ih, a.nh
  local st = C.cs_scan_with(oh, xh, cdim, op, ARGS)
  if st == S_OOM then
    core.collect()
    st = C.cs_scan_with(oh, xh, cdim, op, ARGS)
  end
  ARGS.mask, ARGS.reset, ARGS.indices, ARGS.initial = nil, nil, nil, nil
  if st ~= 0 then core.fail(fname) end
end

local function scan(op, x, dim, opts, fname)
  local a = prepare(op, x, dim, opts, fname)
  run(op, a, fname)
  return a.out, a.indices
end

local S = {}

-- cs.cumsum(x, dim[, opts]) / x:cumsum(dim[, opts])
function S.cumsum(x, dim, opts) return (scan(SUM, x, dim, opts, "cumsum")) end
-- cs.cumprod(x, dim[, opts]) / x:cumprod(dim[, opts])
function S.cumprod(x, dim, opts) return (scan(PROD, x, dim, opts, "cumprod")) end
-- cs.cummax(x, dim[, opts]) / x:cummax(dim[, opts]): values and their 1-based int64 indices
function S.cummax(x, dim, opts) return scan(MAX, x, dim, opts, "cummax") end
-- cs.cummin(x, dim[, opts]) / x:cummin(dim[, opts])
function S.cummin(x, dim, opts) return scan(MIN, x, dim, opts, "cummin") end
-- cs.logcumsumexp(x, dim[, opts]) / x:logcumsumexp(dim[, opts]): log of the running sum of exp(x)
function S.logcumsumexp(x, dim, opts) return (scan(LSE, x, dim, opts, "logcumsumexp")) end

S.segment_ids_to_reset = segs.segment_ids_to_reset

local M = core.methods
M.cumsum = S.cumsum
M.cumprod = S.cumprod
M.cummax = S.cummax
M.cummin = S.cummin
M.logcumsumexp = S.logcumsumexp

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
  return (scan(SUM, x, dim, merged(opts, "reverse", true, "reverse_cumsum"), "reverse_cumsum"))
end

-- x:masked_cumsum(mask, dim[, opts]): the cumsum where elements under a false mask count as 0.
function M.masked_cumsum(x, mask, dim, opts)
  check_tensor(x, "masked_cumsum", "x")
  if not is_tensor(mask) then
    raise(format("masked_cumsum: mask: expected a bool tensor, got %s", describe(mask)))
  end
  return (scan(SUM, x, dim, merged(opts, "mask", mask, "masked_cumsum"), "masked_cumsum"))
end

-- cs.explain(x, dim[, opts]): the plan a scan with these arguments would run, as one line (the
-- device, kernel family and mode, layout, tile and grid); opts as for the op's scan, plus op =
-- "cumsum" (the default), "cumprod", "cummax", "cummin" or "logcumsumexp".
local EXPLAIN_OPTS = { op = true }
for k in pairs(SCAN_OPTS) do EXPLAIN_OPTS[k] = true end
local explain_buf = ffi.new("char[512]")

function S.explain(x, dim, opts)
  local op, scan_opts = SUM, opts
  if opts ~= nil then
    core.check_opts(opts, EXPLAIN_OPTS, "explain")
    if opts.op ~= nil then
      op = OP_OF[opts.op]
      if not op then
        raise(format("explain: op: expected \"cumsum\", \"cumprod\", \"cummax\", \"cummin\" or \"logcumsumexp\", got %s",
                     describe(opts.op)))
      end
      scan_opts = {}
      for k, v in pairs(opts) do if k ~= "op" then scan_opts[k] = v end end
    end
  end
  local a = prepare(op, x, dim, scan_opts, "explain", true)
  if a.nd == 0 then return a.nh and "0-d tensor: one element, initial" or "0-d tensor: one element, copied" end
  ARGS.flags, ARGS.mask, ARGS.reset, ARGS.indices, ARGS.initial = a.flags, a.mh, a.rh, a.ih, a.nh
  local st = C.cs_scan_explain_with(explain_buf, 512, a.xh, a.cdim, op, ARGS, a.oh, a.odtype)
  ARGS.mask, ARGS.reset, ARGS.indices, ARGS.initial = nil, nil, nil, nil
  if st ~= 0 then core.fail("explain") end
  return ffi.string(explain_buf)
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
-- Checks a scan's arguments as the scan would, without running it or making its outputs.
function S.check(op, x, dim, opts, fname) prepare(op, x, dim, opts, fname, true) end
return S

-- cuscan.shard_scan: the scans of sharded tensors (cuscan.shard). Along a dim that is not sharded,
-- each shard is scanned where it lives. Along the sharded dim:
--   1. totals: each shard's per-line fold along dim, in the accumulation dtype (float64 for floats,
--      the output dtype for integers; masked-out elements read as the identity);
--   2. the totals of every shard are all-gathered (cuscan.group: NCCL between GPUs);
--   3. each shard's carry is the fold, in float64 for floats, of the totals of the shards before it
--      in the scan's direction, taken in that order: ((t1 + t2) + t3) ... for shard 4 of a forward
--      scan, ((tn + tn-1) + ...) for a reverse one. Every device folds the same numbers in the same
--      order, so the result does not depend on timing;
--   4. each shard is scanned from its carry (opts.initial).
-- cummax, cummin and segmented scans along the sharded dim are refused.
local core = require("cuscan.core")
core.own_file()
local scan = require("cuscan.scan")
local verbs = require("cuscan.verbs")

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local type, ipairs, pairs = type, ipairs, pairs
local M = core.methods
local F64, I64, BOOL = core.F64, core.I64, core.BOOL

local SUM, PROD, MAX, MIN, LSE = tonumber(C.CS_SCAN_SUM), tonumber(C.CS_SCAN_PROD), tonumber(C.CS_SCAN_MAX),
                                  tonumber(C.CS_SCAN_MIN), tonumber(C.CS_SCAN_LOGSUMEXP)
local OPTS = { reverse = true, exclusive = true, mask = true, out = true, dtype = true, reset = true, segments = true }
local IDENTITY = { [SUM] = 0, [PROD] = 1, [LSE] = -math.huge }

-- log(exp(a) + exp(b)) element-wise, exact where either side is -inf and for equal infinities
local function logaddexp(a, b)
  local m = M.maximum(a, b)
  local r = M.add(m, M.log(M.add(M.exp(M.sub(a, m)), M.exp(M.sub(b, m)))))
  return verbs.where(M.logical_or(M.eq(m, -math.huge), M.eq(m, math.huge)), m, r)
end

local FOLD = { [SUM] = M.add, [PROD] = M.mul, [LSE] = logaddexp }

-- The scan of part along d starting from carry (x's line shape without d); nil carry: from nothing.
-- The carry enters the scan as its initial value: no pass over the output afterwards.
local function carried_scan(op, part, d, carry, o, fname)
  if carry == nil then return scan.scan(op, part, d, o, fname) end
  o.initial = carry
  local out = scan.scan(op, part, d, o, fname)
  o.initial = nil
  return out
end

-- Per-line totals of part along d in dtype acc, x's shape without d.
local function totals(op, part, d, mask, acc, reverse, fname)
  local shape = part:shape()
  table.remove(shape, d)
  if M.size(part, d) == 0 then
    local t = core.empty(shape, core.DTYPE[acc], core.device_of(core.check_tensor(part, fname, "x")), fname)
    M.fill(t, IDENTITY[op])
    return t
  end
  if op == SUM and mask == nil and acc == "float64" then
    local xh = core.check_tensor(part, fname, "x")
    local t = core.empty(shape, F64, core.device_of(xh), fname)
    core.call(fname, C.cs_reduce, core.check_tensor(t, fname, "out"), xh, d - 1, C.CS_REDUCE_SUM)
    return t
  end
  local line = scan.scan(op, part, d, { mask = mask, dtype = acc, reverse = reverse }, fname)
  return M.contiguous(M.select(line, d, reverse and 1 or -1))
end

return function(shard, SM, state, check_sharded, like, same_sharding)
  -- v (a sharded tensor sharded as s, or, where plain is allowed, a plain tensor of s's shape) as
  -- the list of its parts held here
  local function parts_like(s, v, fname, argname, plain)
    if state[v] then
      same_sharding(s, state[v], fname)
      return state[v].parts
    end
    if not (plain and core.is_tensor(v)) then
      raise(format("%s: %s: expected a tensor sharded as x%s, got %s", fname, argname,
                   plain and " or a plain tensor of x's shape" or "", describe(v)))
    end
    local shape = M.shape(v)
    local same = #shape == #s.shape
    for i = 1, same and #shape or 0 do same = same and shape[i] == s.shape[i] end
    if not same then
      raise(format("%s: %s: expected x's shape %s, got %s", fname, argname, core.shape_str(s.shape),
                   core.shape_str(shape)))
    end
    local at = 1
    for j = 1, s.first - 1 do at = at + s.sizes[j] end
    local parts = {}
    for i, p in ipairs(s.parts) do
      local n = s.sizes[s.first + i - 1]
      parts[i] = M.to(M.narrow(v, s.dim, at, n), { device = p.device })
      at = at + n
    end
    return parts
  end

  local function sharded_scan(op, x, dim, opts, fname)
    local s = check_sharded(x, fname, "x")
    local nd = #s.shape
    local d = core.norm_dim(dim, nd, fname) + 1
    if type(opts) == "table" and opts.initial ~= nil then
      raise(format("%s: initial: not supported on sharded tensors yet", fname))
    end
    core.check_opts(opts, OPTS, fname)
    opts = opts or {}
    local along = d == s.dim
    if along and (op == MAX or op == MIN) then
      raise(format("%s: dim: %s along the sharded dim (%d) is not supported on sharded tensors yet", fname, fname, d))
    end
    if along and (opts.reset ~= nil or opts.segments ~= nil) then
      raise(format("%s: opts: segmented scans (%s) along the sharded dim (%d) are not supported on sharded tensors yet",
                   fname, opts.reset ~= nil and "reset" or "segments", d))
    end
    local per = {}       -- option name -> parts
    for _, k in ipairs({ "mask", "reset", "segments" }) do
      if opts[k] ~= nil then per[k] = parts_like(s, opts[k], fname, k, true) end
    end
    if opts.out ~= nil then
      if op == MAX or op == MIN then
        if type(opts.out) ~= "table" or state[opts.out] or opts.out[1] == nil or opts.out[2] == nil then
          raise(format("%s: out: expected a table {values, indices} of two sharded tensors, got %s", fname,
                       describe(opts.out)))
        end
        per.out_values = parts_like(s, opts.out[1], fname, "out[1]")
        per.out_indices = parts_like(s, opts.out[2], fname, "out[2]")
      else
        per.out = parts_like(s, opts.out, fname, "out")
      end
    end
    local function opts_of(i)
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      for k, list in pairs(per) do o[k] = list[i] end
      if per.out_values then o.out, o.out_values, o.out_indices = { per.out_values[i], per.out_indices[i] }, nil, nil end
      return o
    end
    -- every argument is checked on every shard before any work, so that no process of a group fails
    -- alone between collectives
    for i, p in ipairs(s.parts) do scan.check(op, p, d, opts_of(i), fname) end
    local outs, idx = {}, {}
    if not along then
      for i, p in ipairs(s.parts) do outs[i], idx[i] = scan.scan(op, p, d, opts_of(i), fname) end
    else
      local xdt = core.DTYPE[s.dtype]
      local odt = opts.dtype ~= nil and core.parse_dtype(opts.dtype, fname) or
                  ((xdt == BOOL and op == SUM) and I64 or xdt)
      local acc = core.IS_FLOAT[xdt] and "float64" or core.DTYPE_NAME[odt]
      local reverse = core.check_bool_opt(opts.reverse, fname, "reverse")
      local sends = {}
      for i, p in ipairs(s.parts) do sends[i] = totals(op, p, d, per.mask and per.mask[i], acc, reverse, fname) end
      local recvs = s.group:all_gather(sends)
      local n, fold = #s.sizes, FOLD[op]
      for i, p in ipairs(s.parts) do
        local g = s.first + i - 1
        local carry
        local from, to, step = 1, g - 1, 1
        if reverse then from, to, step = n, g + 1, -1 end
        for j = from, to, step do
          local t = M.select(recvs[i], 1, j)
          carry = carry == nil and t or fold(carry, t)
        end
        outs[i] = carried_scan(op, p, d, carry, opts_of(i), fname)
      end
    end
    if opts.out ~= nil then
      if op == MAX or op == MIN then return opts.out[1], opts.out[2] end
      return opts.out
    end
    if op == MAX or op == MIN then return like(s, outs), like(s, idx) end
    return like(s, outs)
  end

  local NAMES = { cumsum = SUM, cumprod = PROD, cummax = MAX, cummin = MIN, logcumsumexp = LSE }
  for name, op in pairs(NAMES) do
    SM[name] = function(x, dim, opts) return sharded_scan(op, x, dim, opts, name) end
  end
  function SM.reverse_cumsum(x, dim, opts)
    local o = {}
    for k, v in pairs(core.check_opts(opts, OPTS, "reverse_cumsum") or {}) do o[k] = v end
    o.reverse = true
    return sharded_scan(SUM, x, dim, o, "reverse_cumsum")
  end
  function SM.masked_cumsum(x, mask, dim, opts)
    local o = {}
    for k, v in pairs(core.check_opts(opts, OPTS, "masked_cumsum") or {}) do o[k] = v end
    o.mask = mask
    return sharded_scan(SUM, x, dim, o, "masked_cumsum")
  end
  shard.scan = sharded_scan
end

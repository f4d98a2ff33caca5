-- Scans from initial values (opts.initial) on both devices: cumsum, cumprod and logcumsumexp against
-- the plain-Lua oracle on random shapes, dims, dtypes, flags (reverse, exclusive, mask, reset), into
-- poisoned outputs, with the initial values given as tensors of the line shape with or without the
-- scanned dim, as transposed and narrowed views, in other dtypes, or as a Lua number; a line scanned
-- in two pieces, the second from the first's carry, against the whole line's scan; misuse last.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local OPS = { "sum", "prod", "lse" }
-- op -> {x dtype, output dtype, initial dtypes}
local PAIRS = {
  sum = { { "float32", "float32", { "float64", "float32", "int32" } }, { "float64", "float64", { "float64", "float16" } },
          { "int32", "int32", { "int64", "int32", "bool" } }, { "int64", "int64", { "int64", "int32" } },
          { "bool", "int64", { "int64", "bool" } }, { "float16", "float32", { "float64", "bfloat16" } } },
  prod = { { "float32", "float64", { "float64", "float32" } }, { "int64", "int64", { "int64", "int32" } },
           { "bfloat16", "bfloat16", { "float64" } }, { "int32", "int32", { "int64" } } },
  lse = { { "float32", "float32", { "float64", "float32" } }, { "float64", "float64", { "float64", "bfloat16" } } },
}

-- A random value for op in dtype: as in H.random_value, logsumexp's in [-5, 5)
local function value(rng, dtype, op)
  if op == "lse" and dtype ~= "bool" then return rng:uniform(-5, 5) end
  return H.random_value(rng, dtype, op)
end

-- shape without dim (1-based), and with dim's size 1
local function line_shapes(shape, dim)
  local removed, keep = {}, {}
  for d, n in ipairs(shape) do
    keep[d] = d == dim and 1 or n
    if d ~= dim then removed[#removed + 1] = n end
  end
  return removed, keep
end

-- The initial values for x's lines along dim, as `kind` says: a tensor of either line shape, a
-- transposed or narrowed view of a larger tensor, or a Lua number. Returns what opts.initial gets
-- and the values the oracle takes (a nested table of the lines, or the number).
local function make_initial(rng, kind, shape, dim, idtype, op, dev)
  local removed, keep = line_shapes(shape, dim)
  if kind == "number" then
    local v = value(rng, H.is_int_dtype[idtype] and "int64" or "float64", op)
    if type(v) == "boolean" then v = v and 1 or 0 end
    return v, v
  end
  local t
  if kind == "keepdim" then
    t = cs.tensor(H.random_table(rng, keep, idtype, op), { dtype = idtype, device = dev })
  elseif kind == "transposed" and #removed >= 2 then
    local rev = {}
    for i = 1, #removed do rev[i] = removed[#removed + 1 - i] end
    local base = cs.tensor(H.random_table(rng, rev, idtype, op), { dtype = idtype, device = dev })
    t = base:permute((function()
      local p = {}
      for i = 1, #rev do p[i] = #rev + 1 - i end
      return p
    end)())
  elseif kind == "narrowed" and #removed >= 1 then
    local big = { unpack(removed) }
    local d = rng:int(1, #big)
    big[d] = big[d] + 3
    local base = cs.tensor(H.random_table(rng, big, idtype, op), { dtype = idtype, device = dev })
    t = base:narrow(d, 2, removed[d])
  else
    t = cs.tensor(#removed == 0 and value(rng, idtype, op) or H.random_table(rng, removed, idtype, op),
                  { dtype = idtype, device = dev })
  end
  return t, t:totable()
end

local FN = H.FN

-- Scans x (a CPU table of shape) on dev with opts and the initial values, into a poisoned out,
-- and checks against the oracle.
local function check(case, rng, dev)
  local op, shape, dim = case.op, case.shape, case.dim
  local x = cs.tensor(H.random_table(rng, shape, case.dtype, op), { dtype = case.dtype, device = dev })
  local init, init_ref = make_initial(rng, case.kind, shape, dim, case.idtype, op, dev)
  local init_before = type(init) ~= "number" and H.bits(init)
  local mask = case.masked and H.random_mask(rng, shape, 0.7) or nil
  local reset = case.reset and H.random_mask(rng, shape, 0.15) or nil
  local out = cs.full(shape, H.poison(case.odtype), { dtype = case.odtype, device = dev })
  local y = cs[FN[op]](x, dim, { initial = init, reverse = case.reverse, exclusive = case.exclusive,
                                 mask = mask and cs.tensor(mask, { dtype = "bool", device = dev }),
                                 reset = reset and cs.tensor(reset, { dtype = "bool", device = dev }),
                                 dtype = case.odtype, out = out })
  assert.is_true(rawequal(y, out))
  local want = H.scan_ref(x:totable(), dim, { op = op, reverse = case.reverse, exclusive = case.exclusive,
                                               mask = mask, reset = reset, dtype = case.odtype, initial = init_ref })
  H.assert_result(want, y, case.odtype, op, shape[dim] + 1)
  if init_before then assert.is_true(init_before == H.bits(init), "the scan changed its initial values") end
end

local KINDS = { "removed", "keepdim", "number", "transposed", "narrowed" }

H.each_device("scans from initial values (opts.initial)", function(dev, it)
  for _, op in ipairs(OPS) do
    it(FN[op] .. " from random initial values: shapes, dims, dtypes, views, every flag, against the oracle", function()
      H.with_rng("initial " .. op .. dev, function(rng)
        for n = 1, 60 do
          local nd = rng:int(1, 4)
          local shape = {}
          for d = 1, nd do shape[d] = rng:int(1, rng:bool(0.3) and 40 or 6) end
          local pair = rng:pick(PAIRS[op])
          local case = { op = op, shape = shape, dim = rng:int(1, nd), dtype = pair[1], odtype = pair[2],
                         idtype = rng:pick(pair[3]), kind = rng:pick(KINDS), reverse = rng:bool(),
                         exclusive = rng:bool(), masked = rng:bool(0.4), reset = rng:bool(0.3) }
          H.replay(n, ("%s %s->%s from %s (%s) shape %s dim %d%s%s%s%s"):format(FN[op], case.dtype, case.odtype,
            case.idtype, case.kind, table.concat(shape, "x"), case.dim, case.reverse and " reverse" or "",
            case.exclusive and " exclusive" or "", case.masked and " masked" or "", case.reset and " reset" or ""),
            function() check(case, rng, dev) end)
        end
      end)
    end)
  end

  it("long lines (split across threads on the CPU) start from their initial values", function()
    H.with_rng("initial long" .. dev, function(rng)
      for _, shape in ipairs({ { 70000 }, { 2, 66000 }, { 66000, 3 } }) do
        for _, flags in ipairs({ {}, { reverse = true, exclusive = true }, { exclusive = true, masked = true } }) do
          local dim = shape[1] > 1000 and 1 or 2
          check({ op = "sum", shape = shape, dim = dim, dtype = "int64", odtype = "int64", idtype = "int64",
                  kind = "keepdim", reverse = flags.reverse, exclusive = flags.exclusive, masked = flags.masked },
                rng, dev)
          check({ op = "sum", shape = shape, dim = dim, dtype = "float32", odtype = "float64", idtype = "float64",
                  kind = "removed", reverse = flags.reverse, exclusive = flags.exclusive, masked = flags.masked },
                rng, dev)
        end
      end
    end)
  end)

  it("an exclusive scan gives the initial value first; a reset at the first element drops it", function()
    local x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev })
    local init = cs.tensor({ 10, -20 }, { device = dev })
    assert.tensor_equal({ { 10, 11, 13 }, { -20, -16, -11 } }, x:cumsum(2, { initial = init, exclusive = true }))
    assert.tensor_equal({ { 16, 15, 13 }, { -5, -9, -14 } }, x:cumsum(2, { initial = init, reverse = true }))
    local reset = cs.tensor({ { true, false, true }, { false, false, true } }, { device = dev })
    assert.tensor_equal({ { 1, 3, 3 }, { -16, -11, 6 } }, x:cumsum(2, { initial = init, reset = reset }))
    assert.tensor_equal({ { 0, 1, 0 }, { -20, -16, 0 } },
                        x:cumsum(2, { initial = init, reset = reset, exclusive = true }))
    assert.tensor_equal({ { 20, 40, 120 }, { 8, 40, 240 } }, x:cumprod(2, { initial = cs.tensor({ { 20 }, { 2 } }, { device = dev }) }))
    -- a 0-d x is a line of one; a float64 carry keeps its precision in a float32 scan
    assert.equal(7.5, cs.tensor(2.5, { device = dev }):cumsum(1, { initial = 5 }):item())
    local fine = cs.tensor({ 1 + 2 ^ -40 }, { dtype = "float64", device = dev })
    local y = cs.tensor({ 0.5, 0.25 }, { dtype = "float32", device = dev }):cumsum(1, { initial = fine:select(1, 1), dtype = "float64" })
    assert.tensor_equal({ 1.5 + 2 ^ -40, 1.75 + 2 ^ -40 }, y)
    assert.same({ 0, 3 }, cs.zeros({ 0, 3 }, { device = dev }):cumsum(1, { initial = cs.zeros({ 3 }, { device = dev }) }):shape())
    assert.near(math.log(math.exp(1) + math.exp(2)),
                cs.tensor({ 2 }, { dtype = "float64", device = dev }):logcumsumexp(1, { initial = 1 }):item(), 1e-15)
  end)

  it("a line scanned in two pieces, the second from the first's carry, equals the whole line's scan", function()
    H.with_rng("initial pieces" .. dev, function(rng)
      for n = 1, 40 do
        local op = rng:pick({ "sum", "prod", "lse" })
        local dtype = op == "lse" and "float64" or rng:pick({ "int32", "int64", "float32" })
        local odt = H.is_int_dtype[dtype] and dtype or "float64"
        local rows, len = rng:int(1, 5), rng:int(2, 300)
        local k = rng:int(1, len - 1)
        local reverse, masked, segmented = rng:bool(), rng:bool(0.3), rng:bool(0.3)
        H.replay(n, ("%s %s %dx%d cut at %d%s%s%s"):format(FN[op], dtype, rows, len, k, reverse and " reverse" or "",
          masked and " masked" or "", segmented and " reset" or ""), function()
          local x = cs.tensor(H.random_table(rng, { rows, len }, dtype, op), { dtype = dtype, device = dev })
          local m = masked and cs.tensor(H.random_mask(rng, { rows, len }, 0.7), { device = dev }) or nil
          local r = segmented and cs.tensor(H.random_mask(rng, { rows, len }, 0.1), { device = dev }) or nil
          local function piece(first, count, initial)
            return cs[FN[op]](x:narrow(2, first, count), 2, { dtype = odt, reverse = reverse, initial = initial,
                                                              mask = m and m:narrow(2, first, count),
                                                              reset = r and r:narrow(2, first, count) })
          end
          local whole = cs[FN[op]](x, 2, { dtype = odt, reverse = reverse, mask = m, reset = r })
          -- forward: [1, k] then [k + 1, len] from the first piece's last column; reversed: the end first
          local a_first, a_len, b_first, b_len = 1, k, k + 1, len - k
          if reverse then a_first, a_len, b_first, b_len = k + 1, len - k, 1, k end
          local a = piece(a_first, a_len)
          local b = piece(b_first, b_len, a:narrow(2, reverse and 1 or a_len, 1))
          local want = whole:narrow(2, b_first, b_len)
          if H.is_int_dtype[odt] then assert.tensor_equal(want, b)
          else assert.tensor_near(want, b, H.tol(odt, op, len)) end
        end)
      end
    end)
  end)

  it("cs.explain mentions the initial values", function()
    local x = cs.rand({ 4, 5 }, { device = dev })
    assert.truthy(cs.explain(x, 2, { initial = 0 }):find(", initial", 1, true))
    assert.falsy(cs.explain(x, 2):find("initial", 1, true))
    assert.truthy(cs.explain(x, 1, { op = "logcumsumexp", initial = cs.zeros({ 5 }, { device = dev }) }):find(", initial", 1, true))
  end)

  it("misuse: a clear error at the caller's level, and nothing written", function()
    local x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev })
    local out = cs.full({ 2, 3 }, -1, { device = dev })
    H.raises(function() x:cummax(2, { initial = 0 }) end, { "cummax: initial: not supported for cummax / cummin" })
    H.raises(function() x:cummin(2, { initial = cs.zeros({ 2 }, { device = dev }) }) end, { "cummin: initial: not supported" })
    H.raises(function() x:cumsum(2, { initial = cs.zeros({ 3 }, { device = dev }), out = out }) end,
             { "cumsum: initial: expected shape 2x1 or 2", "2x3", "got 3" })
    H.raises(function() x:cumsum(1, { initial = cs.zeros({ 2, 3 }, { device = dev }) }) end,
             { "cumsum: initial: expected shape 1x3 or 3", "got 2x3" })
    H.raises(function() x:cumsum(2, { initial = "1" }) end, { "cumsum: initial: expected a tensor or a number" })
    H.raises(function() x:to("int32"):cumsum(2, { initial = 0.5 }) end, { "cumsum: initial: expected an integer" })
    H.raises(function() x:to("int64"):cumsum(2, { initial = cs.zeros({ 2 }, { device = dev }) }) end,
             { "cumsum: initial:", "not float32" })
    H.raises(function() x:cumprod(2, { initial = cs.full({ 2 }, true, { device = dev }) }) end,
             { "cumprod: initial: cumprod does not take bool values" })
    H.raises(function() x:logcumsumexp(2, { initial = cs.zeros({ 2 }, { dtype = "int32", device = dev }) }) end,
             { "logcumsumexp: initial: logcumsumexp does not take int32 values" })
    local buf = cs.full({ 2, 4 }, -1, { device = dev })
    H.raises(function() x:cumsum(2, { initial = buf:select(2, 2), out = buf:narrow(2, 2, 3) }) end,
             { "cumsum: initial: must not overlap out" })
    H.raises(function() x:reverse_cumsum(2, { initial = cs.zeros({ 5 }, { device = dev }) }) end,
             { "reverse_cumsum: initial: expected shape" })
    assert.tensor_equal(cs.full({ 2, 4 }, -1), buf:cpu())
    assert.tensor_equal(cs.full({ 2, 3 }, -1), out:cpu())
    -- initial may share memory with x
    local y = x:cumsum(2, { initial = x:select(2, 1) })
    assert.tensor_equal({ { 2, 4, 7 }, { 8, 13, 19 } }, y)
  end)
end)

describe("initial values across devices #cuda", function()
  local it = H.cuda_it()
  it("a CPU initial for a CUDA scan is refused", function()
    local x = cs.rand({ 3, 4 }, { device = "cuda" })
    H.raises(function() x:cumsum(2, { initial = cs.zeros({ 3 }, { device = "cpu" }) }) end, { "cumsum: initial: expected a tensor on x's device" })
  end)
end)

-- {outer, len, inner} shapes scanned along dim 2 that reach each family and mode when forced (as in
-- more_scans_cuda_spec.lua), and the plan that runs them with initial values: the rows family's
-- segmented mode (tiles of several lines) does not take them, its single mode runs instead.
local CUDA_SHAPES = {
  ["rows/single"] = { { 61, 1000, 1 }, { 5, 24, 1 } },
  ["rows/lines"] = { { 33, 17001, 1 }, { 8, 4099, 1 } },
  ["rows/pieces"] = { { 3, 30011, 1 }, { 1, 65537, 1 } },
  ["rows/warps"] = { { 33, 17001, 1 }, { 11, 4099, 1 } },
  ["rows/segmented"] = { { 999, 4, 1 }, { 257, 20, 1 } },
  ["columns/lookback"] = { { 5, 333, 65 }, { 3, 1200, 1031 } },
  ["columns/walk"] = { { 5, 333, 65 } },
  ["slabs/whole"] = { { 9, 5, 3 }, { 32, 701, 1 } },
  ["slabs/walk"] = { { 2, 4001, 5 } },
  ["slabs/lookback"] = { { 2, 7001, 3 } },
}
local RUNS_AS = { ["rows/segmented"] = "rows/single", ["rows/single"] = "rows/single", ["rows/lines"] = "rows/lines",
                  ["rows/pieces"] = "rows/pieces", ["rows/warps"] = "rows/warps", ["slabs/whole"] = "slabs/whole", ["slabs/walk"] = "slabs/walk",
                  ["slabs/lookback"] = "slabs/lookback", ["columns/lookback"] = "columns/", ["columns/walk"] = "columns/" }
local CUDA_ORDER = { "rows/single", "rows/lines", "rows/pieces", "rows/warps", "rows/segmented", "columns/lookback",
                     "columns/walk", "slabs/whole", "slabs/walk", "slabs/lookback" }
-- {op, x dtype, output dtype, initial dtype, reset}: cumsum and cumprod plain (ScanSpec) and
-- segmented, logcumsumexp (both FlaggedSpec)
local CUDA_CASES = {
  { "cumsum", "float32", "float32", "float64" }, { "cumsum", "int32", "int64", "int64" },
  { "cumprod", "float64", "float64", "float32" }, { "cumsum", "int64", "int64", "int32", true },
  { "cumprod", "float32", "float64", "float64", true }, { "logcumsumexp", "float32", "float32", "float64" },
  { "logcumsumexp", "float64", "float64", "float64", true },
}

describe("initial values in every CUDA kernel family and mode #cuda", function()
  local it = H.cuda_it()
  after_each(function() if cs.cuda_available() then cs.force_family(nil) end end)

  for _, family in ipairs(CUDA_ORDER) do
    it(family .. ": forced, scans from initial values agree with the CPU's", function()
      cs.force_family(family)
      local rng = H.rng(H.seed_for("initial cuda " .. family))
      for _, shape in ipairs(CUDA_SHAPES[family]) do
        for _, c in ipairs(CUDA_CASES) do
          local op, dtype, odt, idt, segmented = c[1], c[2], c[3], c[4], c[5]
          local seed = rng:int(1, 1e9)
          -- (masked column scans never walk)
          local reverse, exclusive, masked = rng:bool(), rng:bool(0.4), rng:bool(0.3) and family ~= "columns/walk"
          H.replay(seed, ("%s %s %s %s->%s from %s%s%s%s%s"):format(family, table.concat(shape, "x"), op, dtype, odt,
            idt, reverse and " reverse" or "", exclusive and " exclusive" or "", masked and " masked" or "",
            segmented and " reset" or ""), function()
            local u = cs.rand(shape, { seed = seed, dtype = "float64", device = "cpu" })
            local x
            if op == "cumprod" then x = (u * 0.02 + 0.99):to(dtype)
            elseif H.is_int_dtype[dtype] then x = (u * 2000 - 1000):to(dtype)
            else x = (u * 2 - 1):to(dtype) end
            local init = (cs.rand({ shape[1], 1, shape[3] }, { seed = seed + 3, dtype = "float64", device = "cpu" }) * 100 - 50)
            init = op == "cumprod" and (init / 50):to(idt) or init:to(idt)
            local m = masked and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.7) or nil
            local r = segmented and cs.rand(shape, { seed = seed + 2, device = "cpu" }):lt(0.01) or nil
            local want = x[op](x, 2, { dtype = odt, reverse = reverse, exclusive = exclusive, mask = m, reset = r,
                                       initial = init })
            local o = { dtype = odt, reverse = reverse, exclusive = exclusive, mask = m and m:cuda(),
                        reset = r and r:cuda(), initial = init:cuda() }
            local xd = x:cuda()
            local plan = cs.explain(xd, 2, { op = op, dtype = odt, reverse = reverse, exclusive = exclusive,
                                             mask = o.mask, reset = o.reset, initial = o.initial })
            local runs = RUNS_AS[family]
            -- (plain cumsum and cumprod forced to rows/warps walk whole lines by blocks)
            if family == "rows/warps" and op ~= "logcumsumexp" and not segmented then runs = "rows/lines" end
            assert.equal("cuda " .. runs, plan:sub(1, #runs + 5), plan)
            assert.truthy(plan:find(", initial", 1, true), plan)
            o.out = cs.full(shape, H.poison(odt), { dtype = odt, device = "cuda" })
            local got = xd[op](xd, 2, o)
            if H.is_int_dtype[odt] then assert.tensor_equal(want, got)
            elseif odt == "float32" then assert.tensor_near(want, got, 2 ^ -22, 1e-12 * shape[2])
            else assert.tensor_near(want, got, H.tol(odt, op == "cumprod" and "prod" or "sum", shape[2])) end
          end)
        end
      end
    end)
  end

  it("initial values in layouts of their own: transposed x, initial and out, every flag", function()
    local rng = H.rng(H.seed_for("initial cuda layouts"))
    for n = 1, 20 do
      local seed = rng:int(1, 1e9)
      local dim, reverse, exclusive = rng:int(1, 2), rng:bool(), rng:bool()
      H.replay(seed, ("dim %d%s%s"):format(dim, reverse and " reverse" or "", exclusive and " exclusive" or ""), function()
        local x = cs.rand({ 301, 37 }, { seed = seed, device = "cpu" }):transpose(1, 2)
        local init = cs.rand(dim == 1 and { 301 } or { 37 }, { seed = seed + 1, dtype = "float64", device = "cpu" })
        local want = x:cumsum(dim, { reverse = reverse, exclusive = exclusive, initial = init })
        local out = cs.full({ 301, 37 }, 0 / 0, { device = "cuda" }):transpose(1, 2)
        local got = x:cuda():cumsum(dim, { reverse = reverse, exclusive = exclusive, initial = init:cuda(), out = out })
        assert.tensor_near(want, got, 2 ^ -22, 1e-9)
      end)
    end
  end)
end)

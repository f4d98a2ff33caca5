-- cummax, cummin, logcumsumexp and segmented (reset) cumsum / cumprod in every CUDA kernel family
-- and mode, forced on small shapes each can take (GPU host only; pending with the reason elsewhere),
-- against the CPU backend: cummax / cummin values bit for bit (the elements' own bits: -0.0, NaN)
-- and their indices exactly, integers exactly, floats within an ulp of the output (both round one
-- float64 prefix); into poisoned outputs, with ties, NaN, infinities and -0.0 in the inputs, masks
-- and resets in several densities; bit for bit from run to run.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

-- {outer, len, inner} shapes scanned along dim 2, per family/mode, that every dtype pair below can
-- take there (the flagged kernels hold fewer elements a thread than cumsum's).
local SHAPES = {
  ["slabs/whole"] = { { 9, 5, 3 }, { 200, 13, 3 }, { 32, 701, 1 }, { 5, 2, 3000 } },
  ["slabs/walk"] = { { 2, 4001, 5 }, { 3, 513, 640 } },
  ["slabs/lookback"] = { { 2, 7001, 3 }, { 1, 30000, 7 } },
  ["rows/segmented"] = { { 999, 4, 1 }, { 257, 20, 1 } },
  ["rows/single"] = { { 61, 1000, 1 }, { 5, 24, 1 } },
  ["rows/lines"] = { { 33, 17001, 1 }, { 8, 4099, 1 } },
  ["rows/pieces"] = { { 3, 30011, 1 }, { 1, 65537, 1 } },
  ["rows/warps"] = { { 33, 17001, 1 }, { 11, 4099, 1 }, { 70, 600, 1 } },
  ["columns/lookback"] = { { 5, 333, 65 }, { 3, 1200, 1031 } },
  ["columns/walk"] = { { 5, 333, 65 }, { 3, 1200, 1031 } },
}
local ORDER = { "slabs/whole", "slabs/walk", "slabs/lookback", "rows/segmented", "rows/single", "rows/lines",
                "rows/pieces", "rows/warps", "columns/lookback", "columns/walk" }

-- op -> {input dtype, output dtype} pairs
local PAIRS = {
  cummax = { { "float32" }, { "float64" }, { "float16" }, { "bfloat16" }, { "int32" }, { "int64" }, { "bool" } },
  logcumsumexp = { { "float32" }, { "float64" }, { "float16" }, { "bfloat16", "float32" }, { "float32", "float64" } },
  cumsum = { { "float32" }, { "float64" }, { "int32", "int64" }, { "bool", "int64" }, { "float16", "float32" } },
  cumprod = { { "float64" }, { "float32" }, { "int64" }, { "bfloat16", "float64" } },
}
PAIRS.cummin = PAIRS.cummax
local OPS = { "cummax", "cummin", "logcumsumexp", "cumsum", "cumprod" }

local function special(x, u, lo, hi, value)
  return cs.where(u:ge(lo):logical_and(u:lt(hi)), value, x)
end

-- Inputs on the CPU: small integers for cummax (ties everywhere), with NaN, +-inf and -0.0 in
-- places; U[-100, 100) with some -inf for logcumsumexp; values near 1 for products.
local function input(shape, dtype, op, rng, seed)
  local base = cs.rand(shape, { seed = seed, dtype = "float64", device = "cpu" })
  if dtype == "bool" then return base:lt(0.5) end
  local int = dtype == "int32" or dtype == "int64"
  local u = cs.rand(shape, { seed = seed + 7, dtype = "float64", device = "cpu" })
  if op == "logcumsumexp" then
    return special((base * 200 - 100):to(dtype), u, 0, 0.02, -1 / 0)
  elseif op == "cumprod" then
    return int and ((base * 3):to(dtype) - 1) or (base * 0.02 + 0.99):to(dtype)
  elseif op == "cumsum" then
    return int and (base * 2000 - 1000):to(dtype) or (base * 2 - 1):to(dtype)
  end
  local x = ((base * 9):to("int32") - 4):to(dtype)
  if int then return x end
  local nan = rng:pick({ 0, 0.0005, 0.01 })
  x = special(x, u, 0.1, 0.2, -0.0)
  x = special(x, u, 0.2, 0.21, 1 / 0)
  x = special(x, u, 0.21, 0.22, -1 / 0)
  return special(x, u, 0.5, 0.5 + nan, 0 / 0)
end

local function run(op, x, dim, opts)
  if op == "cummax" or op == "cummin" then return x[op](x, dim, opts) end
  return x[op](x, dim, opts), nil
end

-- CUDA's result against the CPU's: float32 within 2 ulp, other floats by H.tol.
local function check(op, odtype, len, want, got, want_i, got_i)
  assert.equal(want.dtype, got.dtype)
  if want_i then
    assert.is_true(H.bits(want) == H.bits(got), "cummax / cummin values differ in their bits")
    assert.tensor_equal(want_i, got_i)
  elseif H.is_int_dtype[odtype] then
    assert.tensor_equal(want, got)
  elseif odtype == "float32" then
    assert.tensor_near(want, got, 2 ^ -22, 1e-12 * len)
  else
    assert.tensor_near(want, got, H.tol(odtype, op == "cumprod" and "prod" or "sum", len))
  end
end

-- One scan of op over shape along dim 2 with a random dtype pair, flags and options, in the family
-- forced: the CUDA result against the CPU's into poisoned outputs, and again bit for bit. how
-- (optional): pairs (instead of PAIRS[op]), resets (the densities to pick from), plan (words the
-- plan must hold).
local function agree_in(family, shape, op, rng, how)
  how = how or {}
  local pair = rng:pick(how.pairs or PAIRS[op])
  local idtype, odtype = pair[1], pair[2] or pair[1]
  local reset_p = rng:pick(how.resets or { 0, 0.001, 0.05, 0.5 })
  local masked = rng:bool(0.4) and family ~= "columns/walk"   -- masked column scans never walk
  -- the segmented sums and products are the point here: they always reset
  if (op == "cumsum" or op == "cumprod") and reset_p == 0 then reset_p = 0.01 end
  local opts = { reverse = rng:bool(), exclusive = rng:bool(0.3) }
  if pair[2] then opts.dtype = odtype end
  local seed = rng:int(1, 1e9)
  local case = ("%s %s %s %s -> %s reset %g%s%s%s"):format(family, table.concat(shape, "x"), op, idtype,
    odtype, reset_p, opts.reverse and " reverse" or "", opts.exclusive and " exclusive" or "",
    masked and " masked" or "")
  H.replay(seed, case, function()
    local x = input(shape, idtype, op, rng, seed)
    local m = masked and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.7) or nil
    local r = reset_p > 0 and cs.rand(shape, { seed = seed + 2, device = "cpu" }):lt(reset_p) or nil
    local o_cpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype, mask = m, reset = r }
    local want, want_i = run(op, x, 2, o_cpu)

    local xd = x:cuda()
    local o_gpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype,
                    mask = m and m:cuda(), reset = r and r:cuda() }
    local out = cs.full(shape, H.poison(odtype), { dtype = odtype, device = "cuda" })
    local out_i = want_i and cs.full(shape, -777777, { dtype = "int64", device = "cuda" })
    o_gpu.out = want_i and { out, out_i } or out
    local plan = cs.explain(xd, 2, { op = op, reverse = opts.reverse, exclusive = opts.exclusive,
                                     dtype = opts.dtype, mask = o_gpu.mask, reset = o_gpu.reset })
    assert.equal("cuda " .. family, plan:sub(1, #family + 5), plan)
    if how.plan then assert.is_truthy(plan:find(how.plan, 1, true), plan) end
    local got, got_i = run(op, xd, 2, o_gpu)
    check(op, odtype, shape[2], want, got, want_i, got_i)
    -- bit for bit again
    o_gpu.out = nil
    local again, again_i = run(op, xd, 2, o_gpu)
    assert.is_true(H.bits(got) == H.bits(again), "a second run gave other bits")
    if got_i then assert.is_true(H.bits(got_i) == H.bits(again_i), "a second run gave other indices") end
  end)
end

describe("cummax, cummin, logcumsumexp and segmented scans in every kernel family #cuda", function()
  local it = H.cuda_it()
  after_each(function() if cs.cuda_available() then cs.force_family(nil) end end)

  for _, family in ipairs(ORDER) do
    it(family .. ": forced, each new op runs there and agrees with the CPU", function()
      cs.force_family(family)
      local rng = H.rng(H.seed_for("more scans " .. family))
      for _, op in ipairs(OPS) do
        for _, shape in ipairs(SHAPES[family]) do
          agree_in(family, shape, op, rng)
        end
      end
    end)
  end

  it("short slabs too wide for one flagged tile take narrower tiles of whole slabs, not pieces", function()
    local rng = H.rng(H.seed_for("narrower whole slabs"))
    -- {outer, len, inner, dtype}: a whole slab fits a tile only some columns at a time
    for _, c in ipairs({ { 7, 3, 512, "float64" }, { 4, 3, 4096, "float64" }, { 5, 5, 512, "float32" },
                         { 3, 7, 777, "float64" }, { 6, 7, 300, "float32" }, { 2, 9, 120, "float64" } }) do
      for _, op in ipairs({ "cummax", "cummin", "cumsum" }) do
        local shape, dtype = { c[1], c[2], c[3] }, c[4]
        local seed = rng:int(1, 1e9)
        H.replay(seed, ("%s %s %s"):format(table.concat(shape, "x"), dtype, op), function()
          local x = input(shape, dtype, op, rng, seed)
          local r = op == "cumsum" and cs.rand(shape, { seed = seed + 2, device = "cpu" }):lt(0.2) or nil
          local opts = { reverse = rng:bool(), reset = r }
          local want, want_i = run(op, x, 2, opts)
          local xd, rd = x:cuda(), r and r:cuda()
          local plan = cs.explain(xd, 2, { op = op, reverse = opts.reverse, reset = rd })
          assert.matches("^cuda slabs/whole: .* tile " .. c[2] .. " rows x %d+ columns", plan)
          local got, got_i = run(op, xd, 2, { reverse = opts.reverse, reset = rd })
          check(op, dtype, c[2], want, got, want_i, got_i)
        end)
      end
    end
  end)

  it("reset, mask and indices in layouts of their own (rows and columns walk each operand's strides)", function()
    for _, family in ipairs({ "rows", "columns" }) do
      cs.force_family(family)
      for _, op in ipairs({ "cummax", "cummin", "logcumsumexp", "cumsum" }) do
        local seed = H.seed_for("more scans layouts " .. family .. op)
        H.replay(seed, family .. " " .. op, function()
          local rng = H.rng(seed)
          local x = input({ 37, 301 }, "float32", op, rng, seed)
          -- mask and reset stored transposed, the outputs written into transposed views
          local m = cs.rand({ 301, 37 }, { seed = seed + 1, device = "cpu" }):lt(0.8):transpose(1, 2)
          local r = cs.rand({ 301, 37 }, { seed = seed + 2, device = "cpu" }):lt(0.03):transpose(1, 2)
          for _, dim in ipairs({ 1, 2 }) do
            local opts = { reverse = rng:bool(), exclusive = rng:bool(0.3) }
            local want, want_i = run(op, x, dim, { reverse = opts.reverse, exclusive = opts.exclusive, mask = m, reset = r })
            local out = cs.full({ 301, 37 }, 0 / 0, { device = "cuda" }):transpose(1, 2)
            local out_i = cs.full({ 301, 37 }, -1, { dtype = "int64", device = "cuda" }):transpose(1, 2)
            local got, got_i = run(op, x:cuda(), dim, { reverse = opts.reverse, exclusive = opts.exclusive,
                                                        mask = m:cuda(), reset = r:cuda(),
                                                        out = want_i and { out, out_i } or out })
            check(op, "float32", 301, want, got, want_i, got_i)
          end
        end)
      end
    end
  end)

  -- logcumsumexp is summed as plain exps from one reference wherever a warp's chunk (rows) or a
  -- thread's column part (columns) holds no reset, NaN, infinity or values more than 600 below the
  -- reference; elsewhere the joined states take it. Lines of U[-100, 100) take the plain sums
  -- throughout; some lines carry such elements in a few places, so parts of both kinds meet and hand
  -- each other their carries (and a carry far below or above the next part's values).
  local LSE_CASES = {   -- family, lines, length; the columns cases lay the lines side by side
    { "rows/warps", 24, 9001 }, { "rows/single", 40, 2000 }, { "rows/lines", 8, 20001 },
    { "rows/pieces", 2, 40001 }, { "columns/lookback", 40, 2001 }, { "columns/walk", 40, 2001 },
    { "columns/single", 40, 24 },   -- (not a family to force: columns take it for short lines)
  }
  for _, case in ipairs(LSE_CASES) do
    local family, nlines, len = case[1], case[2], case[3]
    it("logcumsumexp in " .. family .. ": parts summed from one reference and parts of joined states, side by side",
      function()
      cs.force_family(family == "columns/single" and "columns" or family)
      local columns = family:match("^columns") ~= nil
      local dim = columns and 1 or 2
      local shape = columns and { len, nlines } or { nlines, len }
      local seed = H.seed_for("more scans lse plain " .. family)
      H.replay(seed, family .. " logcumsumexp", function()
        local rng = H.rng(seed)
        for _, pair in ipairs({ { "float32" }, { "float64" }, { "bfloat16", "float32" } }) do
          local idt, odt = pair[1], pair[2] or pair[1]
          local lines = {}
          for line = 1, nlines do
            local v = {}
            for k = 1, len do v[k] = rng:uniform(-100, 100) end
            local kind, at = line % 6, rng:int(1, len)
            if kind == 1 then v[at] = 0 / 0
            elseif kind == 2 then v[at] = 1 / 0
            elseif kind == 3 then v[at] = -1 / 0
            elseif kind == 4 then for k = at, math.min(at + 700, len) do v[k] = v[k] - 1000 end
            elseif kind == 5 then for k = at, math.min(at + 700, len) do v[k] = v[k] + 900 end end
            lines[line] = v
          end
          local x = cs.tensor(lines, { dtype = idt, device = "cpu" })
          if columns then x = x:transpose(1, 2):contiguous() end
          for _, f in ipairs({ {}, { reverse = true }, { exclusive = true }, { reverse = true, exclusive = true } }) do
            local m = rng:bool() and cs.rand(shape, { seed = rng:int(1, 1e9), device = "cpu" }):lt(0.8) or nil
            local o = { reverse = f.reverse, exclusive = f.exclusive, mask = m, dtype = pair[2] }
            local want = x:logcumsumexp(dim, o)
            local xd = x:cuda()
            local plan = cs.explain(xd, dim, { op = "logcumsumexp", dtype = pair[2] })
            assert.equal("cuda " .. family .. ":", plan:sub(1, #family + 6), plan)
            o.mask = m and m:cuda()
            o.out = cs.full(shape, 0 / 0, { dtype = odt, device = "cuda" })
            local got = xd:logcumsumexp(dim, o)
            check("logcumsumexp", odt, len, want, got)
            o.out = nil
            assert.is_true(H.bits(got) == H.bits(xd:logcumsumexp(dim, o)), "a second run gave other bits")
          end
        end
      end)
    end)
  end

  it("views one element past a vector boundary take the element-wise paths, in every family", function()
    for _, family in ipairs(ORDER) do
      cs.force_family(family)
      local shape = SHAPES[family][1]
      local n = shape[1] * shape[2] * shape[3]
      for _, op in ipairs({ "cummax", "logcumsumexp", "cumsum" }) do
        local seed = H.seed_for("more scans misaligned " .. family .. op)
        H.replay(seed, family .. " " .. op, function()
          local rng = H.rng(seed)
          local flat = input({ n + 1 }, "float32", op, rng, seed)
          local r = cs.rand({ n + 1 }, { seed = seed + 2, device = "cpu" }):lt(0.02)
          local x, rx = flat:narrow(1, 2, n):reshape(shape), r:narrow(1, 2, n):reshape(shape)
          local want, want_i = run(op, x, 2, { reset = rx, reverse = true })
          local got, got_i = run(op, flat:cuda():narrow(1, 2, n):reshape(shape), 2,
                                 { reset = r:cuda():narrow(1, 2, n):reshape(shape), reverse = true })
          check(op, "float32", shape[2], want, got, want_i, got_i)
        end)
      end
    end
  end)

  it("flagged slab tiles: full tiles of every head spacing, and 8-byte outputs in tiles of their own", function()
    -- whole tiles fill up when outer is large: every segment of a warp is whole, so the loops run
    -- without a test a row; slab heads 2 to 130 rows apart (below and above a segment's 64-bit word
    -- of heads), look-back pieces with and without their strip's head; slabs of 2048 elements (whole
    -- tiles of 8-byte outputs where the GPU's policy gives them 16 KB)
    local rng = H.rng(H.seed_for("flagged slab tiles"))
    local cases = {
      { "slabs/whole", { 4096, 2, 1 } }, { "slabs/whole", { 700, 3, 4 } }, { "slabs/whole", { 300, 9, 3 } },
      { "slabs/whole", { 160, 17, 2 } }, { "slabs/whole", { 40, 63, 3 } }, { "slabs/whole", { 33, 64, 2 } },
      { "slabs/whole", { 20, 65, 1 } }, { "slabs/whole", { 9, 130, 8 } }, { "slabs", { 64, 32, 64 } },
      { "slabs/lookback", { 3, 999, 3 } }, { "slabs/lookback", { 2, 5000, 8 } }, { "slabs/lookback", { 9, 700, 2 } },
    }
    for _, c in ipairs(cases) do
      cs.force_family(c[1])
      for _, op in ipairs(OPS) do agree_in(c[1], c[2], op, rng) end
    end
  end)

  it("segmented sums and products in whole slab tiles take the plain loops, each reset a head", function()
    -- slabs that fit a plain cumsum's tile whole (a column's segments a thread each) are scanned by
    -- the plain kernel with the resets as more heads: resets everywhere, nowhere (a reset tensor all
    -- false) and in between, slab heads 2 to 999 rows apart, full tiles (whole warps) and short ones;
    -- every shape fits the smallest of the pairs' tiles whole (8-byte outputs: 4096 elements, masked
    -- or not, 17 rows a segment)
    local rng = H.rng(H.seed_for("resets as heads"))
    cs.force_family("slabs")   -- (the family alone: lines of even length would go to rows)
    local pairs = {
      cumsum = { { "float32" }, { "float64" }, { "int32", "int64" }, { "bool", "int64" }, { "float16", "float32" },
                 { "float16" }, { "int64" } },
      cumprod = { { "float64" }, { "float32" }, { "int64" }, { "bfloat16", "float64" }, { "int32", "int64" } },
    }
    local shapes = { { 4096, 2, 1 }, { 700, 3, 4 }, { 300, 9, 3 }, { 160, 17, 2 }, { 40, 63, 3 }, { 33, 64, 2 },
                     { 20, 65, 1 }, { 9, 130, 8 }, { 64, 32, 64 }, { 8, 999, 3 }, { 3, 800, 5 }, { 20000, 5, 3 },
                     { 1, 7, 128 }, { 2, 3, 1 } }
    for _, shape in ipairs(shapes) do
      for _, op in ipairs({ "cumsum", "cumprod" }) do
        agree_in("slabs/whole", shape, op, rng,
                 { pairs = { rng:pick(pairs[op]), { "float32" } }, resets = { 1e-9, 0.001, 0.05, 0.5, 1 },
                   plan = "resets as heads" })
      end
    end
  end)

  it("resets as heads: reset bytes and x at any offsets (16-byte copies of resets, or byte by byte)", function()
    local rng = H.rng(H.seed_for("resets as heads, offsets"))
    for _, shape in ipairs({ { 300, 9, 3 }, { 64, 32, 64 }, { 2000, 4, 7 } }) do
      local n = shape[1] * shape[2] * shape[3]
      for shift = 0, 17, 1 do
        local seed = rng:int(1, 1e9)
        local xshift = shift % 5
        H.replay(seed, ("%s reset shifted by %d, x by %d"):format(table.concat(shape, "x"), shift, xshift), function()
          local flat = input({ n + 5 }, "float32", "cumsum", rng, seed)
          local x = flat:narrow(1, xshift + 1, n):reshape(shape)
          local r = cs.rand({ n + 17 }, { seed = seed + 2, device = "cpu" }):lt(0.1)
          local rx = r:narrow(1, shift + 1, n):reshape(shape)
          local opts = { reverse = rng:bool(), exclusive = rng:bool(0.3) }
          local want = x:cumsum(2, { reverse = opts.reverse, exclusive = opts.exclusive, reset = rx })
          local rd = r:cuda():narrow(1, shift + 1, n):reshape(shape)
          local xd = flat:cuda():narrow(1, xshift + 1, n):reshape(shape)
          local plan = cs.explain(xd, 2, { op = "cumsum", reset = rd })
          assert.is_truthy(plan:find("resets as heads", 1, true), plan)
          local out = cs.full(shape, 0 / 0, { device = "cuda" })
          xd:cumsum(2, { reverse = opts.reverse, exclusive = opts.exclusive, reset = rd, out = out })
          check("cumsum", "float32", shape[2], want, out)
        end)
      end
    end
  end)
end)

-- The CPU's float tiles (src/cpu/float_tiles.c): float32, float64, float16 and bfloat16 sums and
-- products of rows
-- (eight lines transposed in registers), of columns (lines next to each other) and, for float32, of
-- rows read from or written to a transposed tensor (one transpose a block), with streaming
-- stores once the output outgrows the caches (more than 32 MiB always does). Each output must be
-- the in-order float64 prefix of its line rounded once, bit for bit: checked on whole lines against
-- plain Lua, and on the whole tensor against the same scan of the same values through a view with
-- a step of 2 (the generic walk, which the tiles stand in for). Outputs are poisoned first.
local cs = require("cuscan")
local H = require("spec.helpers")
local shell = require("spec.support.shell")
require("cuscan.assertions")

local function cpu_has(flag)
  local f = io.open("/proc/cpuinfo")
  if not f then return false end
  local text = f:read("*a")
  f:close()
  return text:find("flags%s*:[^\n]* " .. flag .. "[ \n]") ~= nil
end
local TILES_RUN = cpu_has("avx2") and cpu_has("fma") and cpu_has("f16c")

-- the same values, in a view whose last dim steps by 2
local function strided(x)
  local shape = x:shape()
  shape[#shape + 1] = 2
  local big = cs.empty(shape, { dtype = x.dtype, device = "cpu" })
  local v = big:select(#shape, 1)
  v:copy(x)
  return v
end

-- a line in walk order, folded in float64 as the contract says, each output rounded once
local function line_ref(xs, mask, o, dtype)
  local n, prod = #xs, o.op == "prod"
  local acc, out = prod and 1.0 or -0.0, {}
  for k = 1, n do
    local i = o.reverse and n + 1 - k or k
    local v = xs[i]
    if mask and not mask[i] then v = prod and 1.0 or 0.0 end
    local before = acc
    if prod then acc = acc * v else acc = acc + v end
    local y = o.exclusive and (k == 1 and (prod and 1.0 or 0.0) or before) or acc
    if dtype == "float32" then y = H.f32(y) elseif dtype ~= "float64" then y = H.round_half(y, dtype) end
    out[i] = y
  end
  return out
end

local function run(x, dim, o, mask, out, dtype)
  local scan = o.op == "prod" and cs.cumprod or cs.cumsum
  return scan(x, dim, { reverse = o.reverse, exclusive = o.exclusive, mask = mask, out = out, dtype = dtype })
end

-- line j of t along dim (rows: dim 2, columns: dim 1) as a Lua array
local function line_of(t, dim, j)
  return t:select(3 - dim, j):contiguous():totable()
end

local FLAGS = {
  {}, { reverse = true }, { exclusive = true }, { masked = true },
  { reverse = true, exclusive = true, masked = true }, { op = "prod" }, { op = "prod", reverse = true, exclusive = true },
}

-- a tensor of `shape` whose memory runs the other way (its transpose is contiguous)
local function transposed(t)
  return t:transpose(1, 2):contiguous():transpose(1, 2)
end

-- layout: nil (x, mask and out alike), "x transposed" (x and mask transposed, out contiguous) or
-- "out transposed" (out transposed)
-- dtype: one float dtype for x and out, or "float32->float64"
local function check(rng, dtype, dim, shape, o, stream, layout)
  local in_dt, out_dt = dtype:match("^(%w+)%->(%w+)$")
  in_dt, out_dt = in_dt or dtype, out_dt or dtype
  local x = cs.rand(shape, { seed = rng:next(), dtype = in_dt, device = "cpu" }) * 2 - 1
  if o.op == "prod" then x = x * 1e-3 + 1 end
  local mask = o.masked and cs.rand(shape, { seed = rng:next(), device = "cpu" }):lt(0.6) or nil
  local out = cs.empty(shape, { dtype = out_dt, device = "cpu" }):fill(0 / 0)
  if layout == "x transposed" then
    x, mask = transposed(x), mask and transposed(mask)
  elseif layout == "out transposed" then
    out = transposed(out)
  end
  local plan = cs.explain(x, dim, { op = o.op == "prod" and "cumprod" or "cumsum", reverse = o.reverse,
                                    exclusive = o.exclusive, mask = mask, dtype = out_dt, out = out })
  if TILES_RUN then
    assert.matches("float tiles in registers", plan)
    assert.equal(stream, plan:find("streaming stores", 1, true) ~= nil, plan)
  end
  run(x, dim, o, mask, out, out_dt)
  local want = run(strided(x), dim, o, mask and strided(mask) or nil, nil, out_dt)
  assert.tensor_equal(want, out, { strict = true })
  local nlines = shape[3 - dim]
  for _, j in ipairs({ 1, rng:int(1, nlines), nlines }) do
    local xs, ms = line_of(x, dim, j), mask and line_of(mask, dim, j) or nil
    local ref = line_ref(xs, ms, o, out_dt)
    assert.tensor_equal(cs.tensor(ref, { dtype = out_dt, device = "cpu" }), out:select(3 - dim, j), { strict = true },
                        ("line %d of %s"):format(j, plan))
  end
end

describe("the CPU's float tiles", function()
  for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
    for _, dim in ipairs({ 2, 1 }) do
      local layout = dim == 2 and "rows" or "columns"
      it(("%s %s of odd sizes, every flag, bit for bit"):format(dtype, layout), function()
        H.with_rng("float tiles small " .. dtype .. layout, function(rng)
          for _, o in ipairs(FLAGS) do
            -- (dense columns of 2-15 lines but 8 take the narrow walk: cpu_narrow_columns_spec)
            local a, b = dim == 2 and rng:int(9, 61) or rng:pick({ 8, rng:int(16, 61) }), rng:int(900, 1100)
            check(rng, dtype, dim, dim == 2 and { a, b } or { b, a }, o, false)
          end
        end)
      end)

      it(("%s %s larger than the caches, streaming, bit for bit"):format(dtype, layout), function()
        H.with_rng("float tiles large " .. dtype .. layout, function(rng)
          local lines, len = ({ float32 = 1031, float64 = 515, float16 = 2062, bfloat16 = 2062 })[dtype], 8195 -- 33.8 MB out
          for _, k in ipairs({ 1, rng:int(2, #FLAGS), #FLAGS - 2 }) do
            check(rng, dtype, dim, dim == 2 and { lines, len } or { len, lines }, FLAGS[k], true)
          end
        end)
      end)
    end
  end

  it("float32 rows into float64: odd sizes and every flag, then streaming and one long line, bit for bit", function()
    H.with_rng("float tiles f32 f64", function(rng)
      for _, o in ipairs(FLAGS) do
        check(rng, "float32->float64", 2, { rng:int(9, 61), rng:int(900, 1100) }, o, false)
      end
      for _, k in ipairs({ 1, rng:int(2, #FLAGS), #FLAGS - 2 }) do
        check(rng, "float32->float64", 2, { 515, 8195 }, FLAGS[k], true)
      end
      check(rng, "float32->float64", 2, { 1, 2 ^ 17 + 77 }, { reverse = true, exclusive = true, masked = true }, false)
    end)
  end)

  for _, layout in ipairs({ "x transposed", "out transposed" }) do
    it(("float32 rows with %s, odd sizes and every flag, then streaming, bit for bit"):format(layout), function()
      H.with_rng("float tiles mixed " .. layout, function(rng)
        for _, o in ipairs(FLAGS) do
          check(rng, "float32", 2, { rng:int(9, 130), rng:int(900, 1100) }, o, false, layout)
        end
        for _, k in ipairs({ 1, rng:int(2, #FLAGS), #FLAGS - 2 }) do
          check(rng, "float32", 2, { 1031, 8195 }, FLAGS[k], true, layout)
        end
      end)
    end)
  end

  -- x transposed into a contiguous result: x's lines go through a buffer of lines along the scan for
  -- the rows tiles, a group of 64 at a time (the last group a few lines), float64 and float32 into
  -- float64 as float32
  for _, dtype in ipairs({ "float64", "float32->float64" }) do
    it(("%s rows with x transposed, odd sizes and every flag, then streaming, bit for bit"):format(dtype), function()
      H.with_rng("float tiles x transposed " .. dtype, function(rng)
        for _, o in ipairs(FLAGS) do
          check(rng, dtype, 2, { rng:int(9, 130), rng:int(900, 1100) }, o, false, "x transposed")
        end
        for _, k in ipairs({ 1, rng:int(2, #FLAGS), #FLAGS - 2 }) do
          check(rng, dtype, 2, { 515, 8195 }, FLAGS[k], true, "x transposed")
        end
      end)
    end)
  end

  -- short rows: many lines a tile, in groups of 8 and the lines after the last group one element at
  -- a time (rows shorter than 8 take the narrow walk: cpu_narrow_columns_spec)
  it("short rows of odd lengths, many lines a tile, every flag, then streaming, bit for bit", function()
    H.with_rng("float tiles short rows", function(rng)
      for _, dtype in ipairs({ "float32", "float64", "float16", "float32->float64" }) do
        for _, o in ipairs(FLAGS) do
          check(rng, dtype, 2, { rng:int(700, 2100), rng:int(8, 40) }, o, false)
        end
      end
      check(rng, "float32", 2, { 2 ^ 20 + 5, 9 }, { reverse = true, exclusive = true, masked = true }, true)
      check(rng, "float32", 2, { 2 ^ 19 + 3, 17 }, {}, true)
    end)
  end)

  -- prefixes on and next to the half types' ties and past their range: a float32 rounded to nearest
  -- on the way would move 1 + 2^-11 + 2^-24 onto a tie that float16 then breaks downwards
  local HARD = {
    float16 = { 1, 2 ^ -11, 2 ^ -24, -2 ^ -24, 2 ^ -10, 0.5, 65504, -65504, 2 ^ -14, 3 },
    bfloat16 = { 1, 2 ^ -8, 2 ^ -30, -2 ^ -133, 2 ^ -7, 0.5, 3.3e38, -3.3e38, 2 ^ -126, 3 },
  }
  for _, dtype in ipairs({ "float16", "bfloat16" }) do
    it(dtype .. " rows and columns round the float64 prefix once, at ties and past the range", function()
      H.with_rng("float tiles hard " .. dtype, function(rng)
        local vals = HARD[dtype]
        for _, dim in ipairs({ 2, 1 }) do
          for _, o in ipairs({ {}, { reverse = true, exclusive = true } }) do
            local lines, len = 16, 203
            local rows = {}
            for i = 1, lines do
              rows[i] = {}
              for k = 1, len do rows[i][k] = rng:pick(vals) end
              -- from a line's start (either end): 1 + half a place + a little, just above a tie
              local sign, at = rng:pick({ 1, -1 }), o.reverse and { len, len - 1, len - 2 } or { 1, 2, 3 }
              rows[i][at[1]], rows[i][at[2]], rows[i][at[3]] = sign, sign * vals[2], sign * vals[3]
            end
            local x = cs.tensor(rows, { dtype = dtype, device = "cpu" })
            if dim == 1 then x = x:transpose(1, 2):contiguous() end
            local out = run(x, dim, o)
            if TILES_RUN then
              assert.matches("float tiles in registers", cs.explain(x, dim, { reverse = o.reverse, exclusive = o.exclusive }))
            end
            assert.tensor_equal(run(strided(x), dim, o), out, { strict = true })
            for j = 1, lines do
              local ref = line_ref(line_of(x, dim, j), nil, o, dtype)
              assert.tensor_equal(cs.tensor(ref, { dtype = dtype, device = "cpu" }), out:select(3 - dim, j), { strict = true })
            end
          end
        end
      end)
    end)
  end

  -- values whose prefixes leave the half types' range on either side, or the double's: products of
  -- the largest values past 2^1024 (and past 2^981 on the way, where a rounding that scales by the
  -- prefix's exponent would overflow), tiny products that round to a zero of their sign,
  -- infinities, NaN and signed zeros, in every flag's walk
  local SPECIAL = {
    float16 = { 65504, -65504, 2 ^ -24, -2 ^ -24, 2 ^ -14, 0.5, -3, 1 / 0, -1 / 0, 0 / 0, -0.0, 0.0, 1 },
    bfloat16 = { 3.3e38, -3.3e38, 2 ^ -133, -2 ^ -133, 2 ^ -126, 0.5, -3, 1 / 0, -1 / 0, 0 / 0, -0.0, 0.0, 1 },
  }
  for _, dtype in ipairs({ "float16", "bfloat16" }) do
    it(dtype .. " rows and columns round special prefixes as half.h does, every flag", function()
      H.with_rng("float tiles special " .. dtype, function(rng)
        local vals = SPECIAL[dtype]
        for _, dim in ipairs({ 2, 1 }) do
          for _, o in ipairs(FLAGS) do
            local lines, len = rng:pick({ 8, 16, 17, 18, 19 }), rng:int(60, 140)
            local rows = {}
            for i = 1, lines do
              rows[i] = {}
              -- mostly the largest or the tiniest, so that products leave the range within a line
              local run = rng:pick({ vals[1], vals[2], vals[3], vals[4] })
              for k = 1, len do rows[i][k] = rng:int(1, 4) == 1 and rng:pick(vals) or run end
            end
            local x = cs.tensor(rows, { dtype = dtype, device = "cpu" })
            if dim == 1 then x = x:transpose(1, 2):contiguous() end
            local mask = o.masked and cs.rand(x:shape(), { seed = rng:next(), device = "cpu" }):lt(0.7) or nil
            local out = cs.empty(x:shape(), { dtype = dtype, device = "cpu" }):fill(0 / 0)
            run(x, dim, o, mask, out)
            if TILES_RUN then
              assert.matches("float tiles in registers", cs.explain(x, dim, { op = o.op == "prod" and "cumprod" or "cumsum",
                                                                            reverse = o.reverse, mask = mask }))
            end
            assert.tensor_equal(run(strided(x), dim, o, mask and strided(mask) or nil), out, { strict = true })
          end
        end
      end)
    end)
  end

  it("streams into an output view whose lines start off the alignment, and scans in place", function()
    H.with_rng("float tiles views", function(rng)
      local x = cs.rand({ 1031, 8195 }, { seed = rng:next(), device = "cpu" }) - 0.5
      local want = strided(x):cumsum(2, { reverse = true })
      -- lines 8200 floats apart (32-byte multiples), each starting one float past a boundary
      local out = cs.empty({ 1031, 8200 }, { device = "cpu" }):fill(0 / 0):narrow(2, 2, 8195)
      x:cumsum(2, { reverse = true, out = out })
      assert.tensor_equal(want, out, { strict = true })
      local col = x:transpose(1, 2):contiguous()
      local want_col = strided(col):cumsum(1, { exclusive = true })
      local outc = cs.empty({ 8195, 1040 }, { device = "cpu" }):fill(0 / 0):narrow(2, 3, 1031)
      col:cumsum(1, { exclusive = true, out = outc })
      assert.tensor_equal(want_col, outc, { strict = true })
      local y = x:clone()
      y:cumsum(2, { out = y })
      assert.tensor_equal(strided(x):cumsum(2), y, { strict = true })
    end)
  end)
  -- the same checks through the AVX2 entries, which a CPU with AVX-512 never takes on its own
  local it_avx512 = it
  if not (TILES_RUN and cpu_has("avx512vl")) or os.getenv("CUSCAN_CPU_AVX512") then
    it_avx512 = function(name) pending(name .. " (only where the CPU has AVX-512VL, from the parent run)") end
  end
  it_avx512("pass through the AVX2 entries too (CUSCAN_CPU_AVX512=0, in a child process)", function()
    local busted = (H.shell("command -v busted"):gsub("%s+$", ""))
    local out, status = shell.sh(("cd %s && CUSCAN_CPU_AVX512=0 CUSCAN_DEVICE=cpu CUSCAN_SPEC_SEED=%d LUA_PATH=%s " ..
      "luajit %s --output=spec/support/summary.lua spec/cpu_float_tiles_spec.lua 2>&1"):format(
      shell.q(shell.root), H.base_seed, shell.q(shell.root .. "/lua/?.lua;" .. shell.root .. "/lua/?/init.lua;./?.lua;" ..
      package.path), shell.q(busted)))
    assert.equal(0, status, out)
    assert.matches("\n%d+ passed, 0 failed", out)
  end)
end)

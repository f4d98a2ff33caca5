-- Scans of float16 and bfloat16 (issue 14, item 2, under issue 12's float contract): they accumulate
-- in float64 and write the input dtype, or float32 or float64 when dtype asks, so every output is
-- the rounding of the float64 prefix: within 1 ulp of it on a parallel device (which may associate
-- the float64 sum otherwise), the very rounding of the in-order prefix on the CPU (which folds as the
-- oracle does). The oracle: the plain-Lua double fold of spec/helpers.lua (H.scan_line) rounded with
-- H.round_half.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local inf, nan = math.huge, 0 / 0
local HALVES = { "float16", "bfloat16" }

-- Random values for a scan op, as stored in dtype: U[0, 1) for sums, U[0.999, 1.001) for products
-- (a product of 2^16 of them stays in range; the dtype's grid near 1 makes them a few values).
local function line_values(rng, n, op, dtype)
  local v = {}
  for i = 1, n do
    v[i] = H.round_half(op == "sum" and rng:uniform(0, 1) or rng:uniform(0.999, 1.001), dtype)
  end
  return v
end

-- Checks the outputs y (a flat list) against the float64 prefixes p rounded to odt: equal on the
-- CPU; on CUDA within 1 ulp (float64 outputs within a reassociated fold's rounding).
local function check(y, p, odt, dev, what)
  local rtol, atol = H.tol("float64", "sum", #p)
  for k = 1, #p do
    local want = H.stored(p[k], odt)
    local a = y[k]
    local ok
    if odt == "float64" then
      ok = dev == "cpu" and (a == want or (a ~= a and want ~= want)) or math.abs(a - want) <= atol + rtol * math.abs(want)
    else
      ok = H.ulps(a, want, odt) <= (dev == "cpu" and 0 or 1)
    end
    if not ok or (a == 0 and dev == "cpu" and 1 / a ~= 1 / want) then
      error(("%s: element %d is %.17g, the float64 prefix %.17g rounds to %.17g"):format(what, k, a, p[k], want), 2)
    end
  end
end

H.each_device("float16 and bfloat16 scans", function(dev, it)
  for _, dtype in ipairs(HALVES) do
    for _, op in ipairs({ "sum", "prod" }) do
      local fn = op == "sum" and "cumsum" or "cumprod"
      it(("%s %s of 2^16 - 1 elements, along rows and columns: each output is the float64 prefix rounded"):format(
        dtype, fn), function()
        H.with_rng(("half scan %s %s %s"):format(dev, dtype, op), function(rng)
          -- one short of the CPU's long lines (2^16), which it cuts into blocks folded apart, so
          -- that its fold is the oracle's, in order (cpu_split_spec.lua covers the cut lines)
          local L = 2 ^ 16 - 1
          local lines = { line_values(rng, L, op, dtype), line_values(rng, L, op, dtype) }
          local prefix = { H.scan_line(lines[1], { op = op }), H.scan_line(lines[2], { op = op }) }
          local rows = cs.tensor(lines, { dtype = dtype, device = dev })
          local y = rows[fn](rows, 2)
          assert.equal(dtype, y.dtype)
          local t = y:totable()
          for i = 1, 2 do check(t[i], prefix[i], dtype, dev, ("%s rows, line %d"):format(dtype, i)) end
          -- the same lines as columns of a L x 2 tensor, and promoted into float32
          local cols = rows:transpose(1, 2):contiguous()
          local yc = cols[fn](cols, 1, { dtype = "float32" }):transpose(1, 2):totable()
          for i = 1, 2 do check(yc[i], prefix[i], "float32", dev, ("%s columns into float32, line %d"):format(dtype, i)) end
          local y64 = rows[fn](rows, 2, { dtype = "float64" }):totable()
          check(y64[1], prefix[1], "float64", dev, dtype .. " rows into float64")
          -- the relative error is the output's own rounding alone (half an ulp)
          local unit = dtype == "float16" and 2 ^ -11 or 2 ^ -8
          local worst = 0
          for k = 1, L do worst = math.max(worst, math.abs(t[1][k] - prefix[1][k]) / math.abs(prefix[1][k])) end
          assert.is_true(worst <= unit * (dev == "cpu" and 1 or 2), ("max relative error %g"):format(worst))
        end)
      end)
    end

    it(dtype .. ": reverse, exclusive and masked scans in every layout round the float64 prefix", function()
      H.with_rng(("half flags %s %s"):format(dev, dtype), function(rng)
        local layouts = {
          { "rows", { 3, 700 }, 2 }, { "columns", { 700, 5 }, 1 }, { "middle dim", { 2, 700, 3 }, 2 },
          { "transposed", { 700, 4 }, 2 },
        }
        for _, op in ipairs({ "sum", "prod" }) do
          for _, layout in ipairs(layouts) do
            local name, shape, dim = layout[1], layout[2], layout[3]
            local x = cs.tensor(H.build(shape, function()
              return op == "sum" and rng:uniform(-1, 1) or rng:uniform(0.99, 1.01)
            end), { dtype = dtype, device = dev })
            local m = cs.tensor(H.random_mask(rng, shape), { device = dev })
            if name == "transposed" then x, m = x:transpose(1, 2), m:transpose(1, 2) end
            local xv, mv = x:totable(), m:totable()
            for _, flags in ipairs({ { reverse = true }, { exclusive = true }, { masked = true },
                                     { reverse = true, exclusive = true, masked = true } }) do
              local opts = { reverse = flags.reverse, exclusive = flags.exclusive, mask = flags.masked and m or nil }
              local y = x[op == "sum" and "cumsum" or "cumprod"](x, dim, opts)
              local ref = H.scan_ref(xv, dim, { op = op, reverse = flags.reverse, exclusive = flags.exclusive,
                                               mask = flags.masked and mv or nil })
              check(H.flatten(y:totable()), H.flatten(ref), dtype, dev, ("%s %s %s %s%s%s"):format(dtype, op, name,
                flags.reverse and "reverse " or "", flags.exclusive and "exclusive " or "", flags.masked and "masked" or ""))
            end
          end
        end
      end)
    end)
  end

  it("-0.0 is the identity of sums; an exclusive scan starts from +0.0; a masked-out element reads +0.0", function()
    for _, dtype in ipairs(HALVES) do
      local z = cs.tensor({ -0.0, -0.0, -0.0 }, { dtype = dtype, device = dev })
      assert.tensor_equal({ -0.0, -0.0, -0.0 }, z:cumsum(1), { strict = true })
      assert.tensor_equal({ 0.0, -0.0, -0.0 }, z:cumsum(1, { exclusive = true }), { strict = true })
      assert.tensor_equal({ -0.0, 0.0, 0.0 }, z:cumsum(1, { mask = cs.tensor({ true, false, true }, { device = dev }) }),
                          { strict = true })
      assert.tensor_equal({ -0.0, -0.0 }, z:narrow(1, 1, 2):cumsum(1, { dtype = "float32" }), { strict = true })
      assert.tensor_equal({ -0.0, -0.0 }, cs.tensor({ -0.0, 2 }, { dtype = dtype, device = dev }):cumprod(1), { strict = true })
    end
  end)

  it("special values follow from the float64 prefix: +-inf only beyond the range, NaN and inf propagate", function()
    local r16 = function(v) return H.round_half(v, "float16") end
    local rb = function(v) return H.round_half(v, "bfloat16") end
    local f16 = { dtype = "float16", device = dev }
    local bf16 = { dtype = "bfloat16", device = dev }
    assert.same({ 60000, inf, 60000 }, cs.tensor({ 60000, 10000, -10000 }, f16):cumsum(1):totable())
    assert.same({ rb(3e38), inf, rb(3e38) }, cs.tensor({ 3e38, 3e38, -3e38 }, bf16):cumsum(1):totable())
    -- a product that underflows the output goes on in float64
    local p = { r16(1e-4), r16(1e-4), r16(1e4) }
    assert.same({ p[1], 0, r16(p[1] * p[2] * p[3]) }, cs.tensor({ 1e-4, 1e-4, 1e4 }, f16):cumprod(1):totable())
    assert.is_true(r16(p[1] * p[2] * p[3]) > 0)
    -- denormal outputs are kept
    assert.same({ 2 ^ -24, 2 ^ -23 }, cs.tensor({ 2 ^ -24, 2 ^ -24 }, f16):cumsum(1):totable())
    assert.same({ 2 ^ -133, 2 ^ -132 }, cs.tensor({ 2 ^ -133, 2 ^ -133 }, bf16):cumsum(1):totable())
    for _, o in ipairs({ f16, bf16 }) do
      local y = cs.tensor({ 1, inf, 1, -inf, 1 }, o):cumsum(1):totable()
      assert.same({ 1, inf, inf }, { y[1], y[2], y[3] })
      assert.is_true(y[4] ~= y[4] and y[5] ~= y[5])
      local q = cs.tensor({ 2, nan, 2 }, o):cumprod(1):totable()
      assert.is_true(q[1] == 2 and q[2] ~= q[2] and q[3] ~= q[3])
      assert.same({ 1, 1, 3 }, cs.tensor({ 1, nan, 2 }, o):cumsum(1, { mask = cs.tensor({ true, false, true }, { device = dev }) }):totable())
    end
  end)

  it("ties and near-ties round once, from the exact float64 prefix, in rows and columns", function()
    -- each line's prefixes are exact in float64, so every device must give these very values; a
    -- prefix just above a tie by less than float32 resolves (2^-40) is where rounding twice
    -- (float64 -> float32 -> the half) would go wrong
    local cases = {
      bfloat16 = {
        { { 1, 2 ^ -8, 2 ^ -40 }, { 1, 1, 1 + 2 ^ -7 } },             -- tie to even, then just above it
        { { 1, 2 ^ -8, -2 ^ -40 }, { 1, 1, 1 } },                     -- just below the tie
        { { 1 + 2 ^ -7, 2 ^ -8, 2 ^ -40 }, { 1 + 2 ^ -7, 1 + 2 ^ -6, 1 + 2 ^ -6 } },   -- tie to even upward
        { { -1, -2 ^ -8, -2 ^ -40 }, { -1, -1, -1 - 2 ^ -7 } },
        { { 2 ^ 100, 2 ^ 92, 2 ^ 60 }, { 2 ^ 100, 2 ^ 100, 2 ^ 100 + 2 ^ 93 } },
        -- at the top of the range: a tie below the largest value stays, one above it is +inf
        { { 2 ^ 127 * (2 - 2 ^ -6), 2 ^ 119, 2 ^ 76 }, { 2 ^ 127 * (2 - 2 ^ -6), 2 ^ 127 * (2 - 2 ^ -6), 2 ^ 127 * (2 - 2 ^ -7) } },
        { { 2 ^ 127 * (2 - 2 ^ -7), 2 ^ 119, -2 ^ 76 }, { 2 ^ 127 * (2 - 2 ^ -7), inf, 2 ^ 127 * (2 - 2 ^ -7) } },
      },
      float16 = {
        { { 1, 2 ^ -11, 2 ^ -24 }, { 1, 1, 1 + 2 ^ -10 } },
        { { 1, 2 ^ -11, -2 ^ -24 }, { 1, 1, 1 } },
        { { 1 + 2 ^ -10, 2 ^ -11, 2 ^ -24 }, { 1 + 2 ^ -10, 1 + 2 ^ -9, 1 + 2 ^ -9 } },
        { { -1, -2 ^ -11, -2 ^ -24 }, { -1, -1, -1 - 2 ^ -10 } },
      },
    }
    for _, dtype in ipairs(HALVES) do
      local lines, want = {}, {}
      for i, c in ipairs(cases[dtype]) do lines[i], want[i] = c[1], c[2] end
      local rows = cs.tensor(lines, { dtype = dtype, device = dev })
      assert.same(lines, rows:totable())   -- the inputs are stored exactly
      assert.same(want, rows:cumsum(2):totable(), dtype .. " rows")
      local cols = rows:transpose(1, 2):contiguous()
      assert.same(want, cols:cumsum(1):transpose(1, 2):totable(), dtype .. " columns")
      -- the same lines side by side in a slab: {line, 3, 4 copies}
      local slab = rows:unsqueeze(3):expand({ #lines, 3, 4 }):contiguous()
      local ys = slab:cumsum(2):totable()
      for i = 1, #lines do
        for c = 1, 4 do
          assert.same(want[i], { ys[i][1][c], ys[i][2][c], ys[i][3][c] }, dtype .. " slab")
        end
      end
    end
  end)

  it("out = and the dtype option: into itself, in place, float32 or float64; other pairs are errors", function()
    for _, dtype in ipairs(HALVES) do
      local o = { dtype = dtype, device = dev }
      local x = cs.tensor({ 0.1, 0.2, 0.3 }, o)
      local want = x:cumsum(1):totable()
      local out = cs.full({ 3 }, nan, o)
      assert.is_true(rawequal(out, x:cumsum(1, { out = out })))
      assert.same(want, out:totable())
      x:cumsum(1, { out = x })
      assert.same(want, x:totable())
      local w = x:cumprod(1, { dtype = "float64" })
      assert.equal("float64", w.dtype)
      local other = dtype == "float16" and "bfloat16" or "float16"
      H.raises(function() x:cumsum(1, { dtype = other }) end,
               { ("cumsum: dtype: a %s input cannot accumulate into %s (supported: %s or float32 or float64)"):format(dtype, other, dtype) })
      H.raises(function() x:cumprod(1, { dtype = "int64" }) end, { "cumprod: dtype: a " .. dtype .. " input cannot accumulate into int64" })
      H.raises(function() cs.tensor({ 1 }, { device = dev }):cumsum(1, { dtype = dtype }) end, { "a float32 input cannot accumulate into " .. dtype })
      H.raises(function() x:cumsum(1, { out = cs.zeros({ 3 }, { device = dev }) }) end, { "out: expected dtype " .. dtype .. " (the output dtype), got float32" })
    end
  end)

  it("every bit pattern in segments of two: read exactly, each pair's sum rounded once, in rows and columns", function()
    -- a segmented scan (resets take the CPU's general walk) of all 65536 patterns in a random order,
    -- restarting every second element: each output is an input itself or the exact float64 sum of
    -- two, rounded once; denormals, the range's top, infinities, NaNs with any payload among them
    H.with_rng("half patterns " .. dev, function(rng)
      for _, dtype in ipairs(HALVES) do
        local bits = H.every_half_pattern(rng)
        local v = {}
        for i, b in ipairs(bits) do v[i] = H.half_value(b, dtype) end
        local x = H.from_half_bits(bits, dtype, dev)
        local function same(a, want, what, k)
          if not (a == want and (a ~= 0 or 1 / a == 1 / want)) and not (a ~= a and want ~= want) then
            error(("%s %s: element %d (bits %04x) is %.17g, want %.17g"):format(dtype, what, k, bits[k], a, want), 3)
          end
        end
        for _, reverse in ipairs({ false, true }) do
          -- rows: restarts at the odd elements counted in scan order
          local r = {}
          for i = 1, 65536 do r[i] = (reverse and 65537 - i or i) % 2 == 1 end
          local reset = cs.tensor(r, { device = dev })
          for _, odt in ipairs({ dtype, "float32", "float64" }) do
            local y = H.flatten(x:cumsum(1, { reset = reset, reverse = reverse, dtype = odt }):totable())
            for i = 1, 65536 do
              local before = reverse and i + 1 or i - 1
              local want = r[i] and v[i] or v[i] + v[before]
              same(y[i], H.stored(want, odt), ("rows%s -> %s"):format(reverse and " reverse" or "", odt), i)
            end
          end
        end
        -- columns: the pairs as two rows of 32768 columns, a segmented scan without a restart
        local cols = x:reshape({ 32768, 2 }):transpose(1, 2):contiguous()
        local none = cs.zeros({ 2, 32768 }, { dtype = "bool", device = dev })
        for _, odt in ipairs({ dtype, "float64" }) do
          local y = cols:cumsum(1, { reset = none, dtype = odt }):transpose(1, 2):contiguous():reshape({ 65536 })
          y = H.flatten(y:totable())
          for i = 1, 65536 do
            same(y[i], H.stored(i % 2 == 1 and v[i] or v[i] + v[i - 1], odt), "columns -> " .. odt, i)
          end
        end
      end
    end)
  end)
end)

describe("float16 and bfloat16 scans, CPU against CUDA #cuda", function()
  local it_cuda = H.cuda_it()
  it_cuda("agree within 1 ulp in every layout, with every flag", function()
    H.with_rng("half cpu cuda", function(rng)
      for _, dtype in ipairs(HALVES) do
        for _, op in ipairs({ "sum", "prod" }) do
          for _, shape in ipairs({ { 64, 5000 }, { 5000, 64 }, { 16, 300, 24 }, { 1, 200000 }, { 3000, 3 } }) do
            local base = cs.rand(shape, { seed = rng:next(), dtype = "float64", device = "cpu" })
            local x = (op == "sum" and base * 2 - 1 or base * 0.02 + 0.99):to(dtype)
            local m = cs.rand(shape, { seed = rng:next(), device = "cpu" }):lt(0.7)
            for dim = 1, #shape do
              for _, odt in ipairs({ dtype, "float32" }) do
                local opts = { reverse = rng:bool(), exclusive = rng:bool(), mask = rng:bool() and m or nil, dtype = odt }
                local fn = op == "sum" and "cumsum" or "cumprod"
                local y = x[fn](x, dim, opts)
                local dopts = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = odt,
                                mask = opts.mask and opts.mask:cuda() or nil }
                local yd = x:cuda()[fn](x:cuda(), dim, dopts)
                local a, b = H.flatten(y:totable()), H.flatten(yd:totable())
                for k = 1, #a do
                  if H.ulps(a[k], b[k], odt) > 1 then
                    error(("%s %s -> %s {%s} dim %d: element %d is %.9g on the CPU, %.9g on CUDA"):format(
                      dtype, fn, odt, table.concat(shape, ", "), dim, k, a[k], b[k]))
                  end
                end
              end
            end
          end
        end
      end
    end)
  end)
end)

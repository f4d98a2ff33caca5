-- The floating-point contract of scans (issue 12, item 2): a float32 scan accumulates in float64 and
-- rounds each output once, so every output is the float32 rounding of a float64 prefix; float64
-- scans accumulate in float64. Special values follow from that rule: an output is +-inf exactly
-- when the float64 prefix lies beyond float32's range, inf and NaN inputs propagate as float64
-- arithmetic says, denormal outputs are kept.
--
-- The oracle is the plain-Lua double scan of spec/helpers.lua (H.scan_line), rounded to float32
-- with H.f32. The CPU folds each line in order, as the oracle does, so its outputs must equal the
-- oracle's bit for bit. A parallel device may associate the float64 prefix otherwise, which moves
-- it by a few float64 ulps: its float32 outputs must be within 1 float32 ulp of the oracle's.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local inf, nan = math.huge, 0 / 0

-- Compares the flat outputs y with the oracle's flat ref (already rounded to the output dtype):
-- identical on the CPU (zeros with their signs); elsewhere within 1 float32 ulp, and float64
-- outputs within the rounding of a differently associated float64 fold over lines of len.
local function check(y, ref, dev, odt, what, len)
  for k = 1, #ref do
    local a, e = y[k], ref[k]
    local same = (a ~= a and e ~= e) or (a == e and (a ~= 0 or 1 / a == 1 / e))
    if not same then
      if dev == "cpu" then
        error(("%s: element %d is %.17g, the rounded float64 prefix is %.17g"):format(what, k, a, e), 2)
      elseif odt == "float32" then
        local d = H.f32_ulps(a, e)
        if d > 1 then
          error(("%s: element %d is %.9g, %g float32 ulps from the rounded float64 prefix %.9g"):format(what, k, a, d, e), 2)
        end
      else
        local rtol, atol = H.tol("float64", "sum", len)
        if not (math.abs(a - e) <= atol + rtol * math.abs(e)) then
          error(("%s: element %d is %.17g, the float64 prefix is %.17g"):format(what, k, a, e), 2)
        end
      end
    end
  end
end

local function round_all(flat, odt)
  if odt ~= "float32" then return flat end
  local out = {}
  for k, v in ipairs(flat) do out[k] = H.f32(v) end
  return out
end

-- The layouts a scan meets: lines along the last dim, along the first (columns), along a middle
-- dim, and through strided views (a transpose, a narrowed row).
local LAYOUTS = {
  { "rows", function(L, dev, gen) return cs.tensor(H.build({ 3, L }, gen), { device = dev }), 2 end },
  { "columns", function(L, dev, gen) return cs.tensor(H.build({ L, 5 }, gen), { device = dev }), 1 end },
  { "middle dim", function(L, dev, gen) return cs.tensor(H.build({ 2, L, 3 }, gen), { device = dev }), 2 end },
  { "transposed rows", function(L, dev, gen)
      return cs.tensor(H.build({ L, 4 }, gen), { device = dev }):transpose(1, 2), 2
    end },
  { "narrowed rows", function(L, dev, gen)
      return cs.tensor(H.build({ 2, L + 7 }, gen), { device = dev }):narrow(2, 4, L), 2
    end },
}

H.each_device("float contract", function(dev, it)
  for _, op in ipairs({ "sum", "prod" }) do
    local fn = op == "sum" and "cumsum" or "cumprod"
    for _, odt in ipairs({ "float32", "float64" }) do
      it(("float32 %s into %s: every output is the %s rounding of the float64 prefix, in every layout"):format(
        fn, odt, odt), function()
        local seed = H.seed_for(("contract %s %s %s"):format(dev, op, odt))
        local rng = H.rng(seed)
        -- long enough that a float32 accumulator would drift by many ulps
        local L = rng:int(1500, 2500)
        local function gen()
          if op == "sum" then return rng:uniform(0, 1) end
          return rng:uniform(0.999, 1.001)
        end
        for _, layout in ipairs(LAYOUTS) do
          for _, flags in ipairs({ {}, { reverse = true }, { exclusive = true }, { reverse = true, exclusive = true },
                                   { masked = true }, { masked = true, reverse = true } }) do
            local name = ("%s %s -> %s, %s%s%s%s"):format(fn, "float32", odt, layout[1],
              flags.reverse and ", reverse" or "", flags.exclusive and ", exclusive" or "", flags.masked and ", masked" or "")
            H.replay(seed, name, function()
              local x, dim = layout[2](L, dev, gen)
              local mask = flags.masked and x:lt(op == "sum" and 0.7 or 1.0005) or nil
              local poisoned = cs.full(x:shape(), nan, { dtype = odt, device = dev })
              local y = x[fn](x, dim, { reverse = flags.reverse, exclusive = flags.exclusive, mask = mask,
                                        dtype = odt, out = poisoned })
              local ref = H.scan_ref(x:totable(), dim, { op = op, reverse = flags.reverse, exclusive = flags.exclusive,
                                                          mask = mask and mask:totable() or nil, dtype = "float64" })
              check(H.flatten(y:totable()), round_all(H.flatten(ref), odt), dev, odt, name, L)
            end)
          end
        end
      end)
    end
  end

  it("float64 scans fold in float64: outputs equal the float64 prefix", function()
    local seed = H.seed_for("contract float64 " .. dev)
    local rng = H.rng(seed)
    H.replay(seed, "float64 cumsum and cumprod", function()
      for _, op in ipairs({ "sum", "prod" }) do
        local values = H.build({ 4, 3000 }, function()
          return op == "sum" and rng:uniform(-1, 1) or rng:uniform(0.999, 1.001)
        end)
        local x = cs.tensor(values, { dtype = "float64", device = dev })
        for _, rev in ipairs({ false, true }) do
          local y = op == "sum" and x:cumsum(2, { reverse = rev }) or x:cumprod(2, { reverse = rev })
          local ref = H.flatten(H.scan_ref(values, 2, { op = op, reverse = rev, dtype = "float64" }))
          check(H.flatten(y:totable()), ref, dev, "float64", op, 3000)
        end
      end
    end)
  end)

  -- y's first line against the oracle on the float32-stored values, rounded to float32
  local function special(values, op, opts)
    opts = opts or {}
    local stored = H.as_stored(values, "float32")
    local ref = round_all(H.scan_line(stored, { op = op, reverse = opts.reverse, exclusive = opts.exclusive }), "float32")
    -- laid out as a row, a column and the column of a wide tensor
    for _, l in ipairs(H.line_layouts(values, dev)) do
      local kind, x, d = l[1], l[2], l[3]
      local y = x[op == "sum" and "cumsum" or "cumprod"](x, d, opts)
      check(H.first_line(y, kind), ref, dev, "float32", ("%s of {%s} as a %s"):format(op, table.concat(values, ", "), kind),
            #values)
    end
    return ref
  end

  it("an output is inf exactly when the float64 prefix is beyond float32's range", function()
    local ref = special({ 3e38, 3e38, -3e38 }, "sum")
    assert.same({ H.f32(3e38), inf, H.f32(3e38) }, ref)
    special({ -3e38, 3e38, 3e38 }, "sum", { reverse = true })
    special({ 3e38, 3e38, -3e38, -3e38, -3e38, 3e38 }, "sum", { exclusive = true })
    ref = special({ 1e30, 1e30, 1e-30, 1e-30 }, "prod")
    assert.same({ H.f32(1e30), inf }, { ref[1], ref[2] })
    assert.is_true(ref[3] < inf and ref[4] < 2)
  end)

  it("a cumprod through the denormal range is the float32 rounding of the float64 product", function()
    local ref = special({ 1e-38, 1e-5, 1e5 }, "prod")
    assert.equal(H.f32(H.f32(1e-38) * H.f32(1e-5) * H.f32(1e5)), ref[3])
    assert.is_true(math.abs(ref[3] - 1e-38) < 1e-44)         -- not float32 arithmetic's 9.949219e-39
    special({ 1e-20, 1e-20, 1e20, 1e20 }, "prod")             -- down to a denormal and back
    special({ 1e-38, -0.99e-38, 2 ^ -149, -2 ^ -149 }, "sum")  -- sums landing on denormals
    local tiny = special({ 2 ^ -149, 2 ^ -149, 2 ^ -149 }, "sum")
    assert.same({ 2 ^ -149, 2 ^ -148, 3 * 2 ^ -149 }, tiny)
  end)

  it("inf and NaN inputs propagate as float64 arithmetic says", function()
    -- the float64 prefix 6e38 is finite, so adding -inf gives -inf, not inf - inf = NaN
    local ref = special({ 3e38, 3e38, -inf, 1 }, "sum")
    assert.same({ H.f32(3e38), inf, -inf, -inf }, ref)
    -- 1e60 (inf in float32) times 0 is 0 in float64, not inf * 0 = NaN
    ref = special({ 1e30, 1e30, 0, 5 }, "prod")
    assert.same({ H.f32(1e30), inf, 0, 0 }, ref)
    ref = special({ 1, inf, -inf, 2 }, "sum")
    assert.same({ 1, inf }, { ref[1], ref[2] })
    assert.is_true(ref[3] ~= ref[3] and ref[4] ~= ref[4])
    ref = special({ 2, nan, 3 }, "prod", { reverse = true })
    assert.equal(3, ref[3])
    assert.is_true(ref[1] ~= ref[1] and ref[2] ~= ref[2])
  end)
end)

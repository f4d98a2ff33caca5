-- Scans against the plain-Lua oracle on both devices: every op x reverse x exclusive x mask x
-- dtype along every dim of 1-D..4-D tensors, non-contiguous views, line lengths that straddle
-- block sizes, in-place and poisoned `out`, 0-d and empty tensors.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local PAIRS = {
  sum = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" }, { "int32", "int32" },
          { "int32", "int64" }, { "int64", "int64" }, { "bool", "int64" }, { "bool", "int32" } },
  prod = { { "float32", "float32" }, { "float32", "float64" }, { "float64", "float64" }, { "int32", "int32" },
           { "int32", "int64" }, { "int64", "int64" } },
}
local FN = { sum = "cumsum", prod = "cumprod" }

-- the output dtype cuscan picks when opts.dtype is not given
local function default_out(idt) return idt == "bool" and "int64" or idt end

local FLAGS = {}
for _, rev in ipairs({ false, true }) do
  for _, excl in ipairs({ false, true }) do
    for _, masked in ipairs({ false, true }) do
      FLAGS[#FLAGS + 1] = { reverse = rev, exclusive = excl, masked = masked }
    end
  end
end

local function flag_text(f)
  local parts = {}
  if f.reverse then parts[#parts + 1] = "reverse" end
  if f.exclusive then parts[#parts + 1] = "exclusive" end
  if f.masked then parts[#parts + 1] = "masked" end
  return #parts > 0 and table.concat(parts, " ") or "plain"
end

local function shape_text(s) return #s == 0 and "scalar" or table.concat(s, "x") end

-- Runs one scan case: x (a tensor, perhaps a view) with values xv; checks the result of a new
-- output, of a poisoned `out` (addressed with the negative dim), and that x is unchanged.
local function check_case(x, xv, dim, op, odt, flags, dev, rng, out_maker)
  local shape = x:shape()
  local nd = #shape
  local mv, mask
  if flags.masked then
    mv = H.random_mask(rng, shape)
    mask = cs.tensor(mv, { device = dev, dtype = "bool" })
  end
  local idt = x.dtype
  local opts = { reverse = flags.reverse, exclusive = flags.exclusive, mask = mask }
  if odt ~= default_out(idt) then opts.dtype = odt end
  local y = cs[FN[op]](x, dim, opts)
  assert.equal(odt, y.dtype)
  assert.equal(dev, y.device)
  assert.same(shape, y:shape())
  local expected = H.scan_ref(xv, dim, { op = op, reverse = flags.reverse, exclusive = flags.exclusive,
                                         mask = mv, dtype = odt })
  local len = shape[dim < 0 and nd + dim + 1 or dim] or 1
  H.assert_result(expected, y, odt, op, len)

  -- again into a poisoned out, method form, negative dim
  local out = out_maker and out_maker(shape, odt) or cs.full(shape, H.poison(odt), { dtype = odt, device = dev })
  local o2 = { reverse = flags.reverse, exclusive = flags.exclusive, mask = mask, out = out }
  if odt ~= default_out(idt) then o2.dtype = odt end
  local ndim = dim > 0 and dim - nd - 1 or dim
  local r = x[FN[op]](x, ndim, o2)
  assert.is_true(rawequal(r, out), "the result is out itself")
  H.assert_result(expected, out, odt, op, len)
  assert.same(xv, x:totable())
  if mask then assert.same(mv, mask:totable()) end
end

H.each_device("scans along every dim", function(dev, it)
  local SHAPES = { { 7 }, { 5, 6 }, { 3, 4, 5 }, { 2, 3, 4, 5 } }
  for _, shape in ipairs(SHAPES) do
    for dim = 1, #shape do
      for _, op in ipairs({ "sum", "prod" }) do
        for _, pair in ipairs(PAIRS[op]) do
          for _, flags in ipairs(FLAGS) do
            local idt, odt = pair[1], pair[2]
            local name = ("%s %s->%s dim %d of %s %s"):format(FN[op], idt, odt, dim, shape_text(shape), flag_text(flags))
            it(name, function()
              local seed = H.seed_for(name .. dev)
              H.replay(seed, name, function()
                local rng = H.rng(seed)
                local x = cs.tensor(H.random_table(rng, shape, idt, op), { dtype = idt, device = dev })
                check_case(x, x:totable(), dim, op, odt, flags, dev, rng)
              end)
            end)
          end
        end
      end
    end
  end
end)

-- Views: x is not contiguous; the mask and out are views too.
local VIEWS = H.VIEWS
local VIEW_PAIRS = {
  sum = { { "float32", "float32" }, { "float64", "float64" }, { "int32", "int64" }, { "bool", "int64" } },
  prod = { { "float32", "float32" }, { "int64", "int64" } },
}

H.each_device("scans of non-contiguous views", function(dev, it)
  for _, v in ipairs(VIEWS) do
    for _, op in ipairs({ "sum", "prod" }) do
      for _, pair in ipairs(VIEW_PAIRS[op]) do
        for _, flags in ipairs(FLAGS) do
          local idt, odt = pair[1], pair[2]
          local nd = #v.base - (v.drops or 0)
          for dim = 1, nd do
            local name = ("%s %s->%s dim %d of %s %s"):format(FN[op], idt, odt, dim, v.name, flag_text(flags))
            it(name, function()
              local seed = H.seed_for(name .. dev)
              H.replay(seed, name, function()
                local rng = H.rng(seed)
                local base = cs.tensor(H.random_table(rng, v.base, idt, op), { dtype = idt, device = dev })
                local x = v.make(base)
                assert.is_false(x:is_contiguous())
                -- out: the same kind of view of a poisoned base
                local function out_maker(_, odtype)
                  local ob = cs.full(v.base, H.poison(odtype), { dtype = odtype, device = dev })
                  return v.make(ob)
                end
                check_case(x, x:totable(), dim, op, odt, flags, dev, rng, out_maker)
              end)
            end)
          end
        end
      end
    end
  end
end)

H.each_device("scans of lines of many lengths", function(dev, it)
  local LENGTHS = { 0, 1, 2, 31, 32, 33, 1023, 1025, 4097, 5003 }  -- 5003 is prime
  local CASES = { { "sum", "float32" }, { "sum", "int32" }, { "prod", "float32" }, { "prod", "int64" } }
  for _, len in ipairs(LENGTHS) do
    for _, case in ipairs(CASES) do
      local op, dt = case[1], case[2]
      for _, flags in ipairs(FLAGS) do
        for _, orient in ipairs({ "rows", "columns" }) do
          local shape = orient == "rows" and { 3, len } or { len, 3 }
          local dim = orient == "rows" and 2 or 1
          local name = ("%s %s of %d along dim %d of %s %s"):format(FN[op], dt, len, dim, shape_text(shape), flag_text(flags))
          it(name, function()
            local seed = H.seed_for(name .. dev)
            H.replay(seed, name, function()
              local rng = H.rng(seed)
              -- tables cannot hold a 3x0 shape: build from a flat list and reshape
              local flat = {}
              for i = 1, shape[1] * shape[2] do flat[i] = H.random_value(rng, dt, op) end
              local x = cs.tensor(flat, { dtype = dt, device = dev }):reshape(shape)
              local xv = x:totable()
              if len == 0 then
                local y = cs[FN[op]](x, dim, { reverse = flags.reverse, exclusive = flags.exclusive,
                                                 mask = flags.masked and x:ne(0) or nil })
                assert.same(shape, y:shape())
                assert.equal(0, y:numel())
                assert.equal(dt, y.dtype)
                return
              end
              check_case(x, xv, dim, op, dt, flags, dev, rng)
            end)
          end)
        end
      end
    end
  end
end)

H.each_device("in-place scans (out = x)", function(dev, it)
  local PAIRS_SAME = { sum = { "float32", "float64", "int32", "int64" }, prod = { "float32", "float64", "int32", "int64" } }
  for _, op in ipairs({ "sum", "prod" }) do
    for _, dt in ipairs(PAIRS_SAME[op]) do
      for _, flags in ipairs(FLAGS) do
        for dim = 1, 3 do
          for _, view in ipairs({ "contiguous", "transposed" }) do
            local name = ("%s %s in place along dim %d of a %s 3x4x5 %s"):format(FN[op], dt, dim, view, flag_text(flags))
            it(name, function()
              local seed = H.seed_for(name .. dev)
              H.replay(seed, name, function()
                local rng = H.rng(seed)
                local x = cs.tensor(H.random_table(rng, { 3, 4, 5 }, dt, op), { dtype = dt, device = dev })
                if view == "transposed" then x = x:transpose(1, 3) end
                local xv = x:totable()
                local mv, mask
                if flags.masked then
                  mv = H.random_mask(rng, x:shape())
                  mask = cs.tensor(mv, { device = dev })
                end
                local r = x[FN[op]](x, dim, { out = x, reverse = flags.reverse, exclusive = flags.exclusive, mask = mask })
                assert.is_true(rawequal(r, x))
                local expected = H.scan_ref(xv, dim, { op = op, reverse = flags.reverse, exclusive = flags.exclusive,
                                                       mask = mv, dtype = dt })
                H.assert_result(expected, x, dt, op, x:size(dim))
              end)
            end)
          end
        end
      end
    end
  end
end)

H.each_device("scans of 0-d and empty tensors", function(dev, it)
  it("a 0-d tensor scans along dim 1 or -1 to itself, or to the identity when exclusive", function()
    local x = cs.tensor(2.5, { device = dev })
    assert.equal(0, x:dim())
    assert.equal(2.5, x:cumsum(1):item())
    assert.equal(2.5, x:cumsum(-1):item())
    assert.equal(0, x:cumsum(1):dim())
    assert.equal(0, x:cumsum(1, { exclusive = true }):item())
    assert.equal(1, x:cumprod(-1, { exclusive = true }):item())
    assert.equal(2.5, x:cumprod(1, { reverse = true }):item())
    local m = cs.tensor(false, { device = dev })
    assert.equal(0, x:cumsum(1, { mask = m }):item())
    assert.equal(1, x:cumprod(1, { mask = m }):item())
    local out = cs.tensor(7, { device = dev })
    assert.is_true(rawequal(out, x:cumsum(1, { out = out })))
    assert.equal(2.5, out:item())
    assert.has_error(function() x:cumsum(2) end)
    assert.has_error(function() x:cumsum(0) end)
  end)

  it("empty tensors scan to empty results of the right shape and dtype along every dim", function()
    for _, shape in ipairs({ { 0 }, { 3, 0 }, { 0, 4 }, { 2, 0, 3 } }) do
      local x = cs.zeros(shape, { device = dev, dtype = "int32" })
      for d = 1, #shape do
        local y = x:cumsum(d, { dtype = "int64" })
        assert.same(shape, y:shape())
        assert.equal("int64", y.dtype)
        local p = cs.ones(shape, { device = dev }):cumprod(-d, { reverse = true, exclusive = true })
        assert.same(shape, p:shape())
      end
    end
  end)

  it("dims of length 1 give the element itself (or the identity when exclusive)", function()
    local x = cs.tensor({ { 3 }, { -4 } }, { device = dev })
    assert.tensor_equal({ { 3 }, { -4 } }, x:cumsum(2))
    assert.tensor_equal({ { 0 }, { 0 } }, x:cumsum(2, { exclusive = true }))
    assert.tensor_equal({ { 1 }, { 1 } }, x:cumprod(2, { exclusive = true, reverse = true }))
    assert.tensor_equal({ { 3 }, { -1 } }, x:cumsum(1))
  end)
end)

H.each_device("scan shorthands", function(dev, it)
  it("reverse_cumsum equals flip(cumsum(flip(x)))", function()
    local seed = H.seed_for("reverse_cumsum" .. dev)
    H.replay(seed, "reverse_cumsum", function()
      local rng = H.rng(seed)
      local xv = H.random_table(rng, { 4, 9 }, "float64", "sum")
      local x = cs.tensor(xv, { dtype = "float64", device = dev })
      local flipped = {}
      for i, row in ipairs(xv) do
        flipped[i] = {}
        for j = 1, #row do flipped[i][j] = row[#row + 1 - j] end
      end
      local f = H.scan_ref(flipped, 2, { op = "sum" })
      local expected = {}
      for i, row in ipairs(f) do
        expected[i] = {}
        for j = 1, #row do expected[i][j] = row[#row + 1 - j] end
      end
      assert.tensor_near(expected, x:reverse_cumsum(2), 1e-12, 1e-12)
      assert.tensor_near(expected, x:cumsum(2, { reverse = true }), 1e-12, 1e-12)
      assert.tensor_near(H.scan_ref(xv, 1, { op = "sum", reverse = true }), x:reverse_cumsum(1), 1e-12, 1e-12)
    end)
  end)

  it("masked_cumsum(mask, dim) equals cumsum with opts.mask", function()
    local seed = H.seed_for("masked_cumsum" .. dev)
    H.replay(seed, "masked_cumsum", function()
      local rng = H.rng(seed)
      local xv = H.random_table(rng, { 5, 6 }, "float32", "sum")
      local mv = H.random_mask(rng, { 5, 6 })
      local x = cs.tensor(xv, { device = dev })
      local m = cs.tensor(mv, { device = dev })
      local expected = H.scan_ref(x:totable(), 1, { op = "sum", mask = mv })
      assert.tensor_near(expected, x:masked_cumsum(m, 1))
      assert.tensor_equal(x:cumsum(1, { mask = m }), x:masked_cumsum(m, 1))
      assert.tensor_near(H.scan_ref(x:totable(), -1, { op = "sum", mask = mv, reverse = true }),
                         x:masked_cumsum(m, -1, { reverse = true }))
    end)
  end)

  it("a mask from a comparison on rand gives a random mask of any size", function()
    local r = cs.rand({ 64, 33 }, { seed = 5, device = dev })
    local m = r:lt(0.5)
    assert.equal("bool", m.dtype)
    local frac = m:sum() / m:numel()
    assert.is_true(frac > 0.35 and frac < 0.65)
    local counts = cs.ones({ 64, 33 }, { device = dev }):masked_cumsum(m, 2)
    assert.tensor_equal(m:sum(2):to("float32"), counts:select(2, -1))
  end)
end)

H.each_device("scans into other elements of x's storage", function(dev, it)
  -- Columns, column blocks and interleaved rows of one tensor share its storage and its address
  -- range but not a single element: a scan may write one into another. Elements in common are
  -- still refused.
  it("one column into another, column blocks, stride-2 rows; initial values from a third column", function()
    local seed = H.seed_for("disjoint out " .. dev)
    H.replay(seed, "disjoint out", function()
      local rng = H.rng(seed)
      for _, dt in ipairs({ "float64", "int32" }) do
        for _, op in ipairs({ "sum", "prod" }) do
          local bv = H.random_table(rng, { 7, 6 }, dt, op)
          local col = function(j) local c = {} for i = 1, 7 do c[i] = bv[i][j] end return c end
          local block = function(j0) local b = {} for i = 1, 7 do b[i] = { bv[i][j0], bv[i][j0 + 1] } end return b end
          local opts = { reverse = rng:bool(), exclusive = rng:bool() }
          local ref = { op = op, reverse = opts.reverse, exclusive = opts.exclusive, dtype = dt }

          local base = cs.tensor(bv, { dtype = dt, device = dev })
          local out = base:select(2, 6)
          assert.is_true(rawequal(out, cs[FN[op]](base:select(2, 1), 1,
            { reverse = opts.reverse, exclusive = opts.exclusive, out = out })))
          H.assert_result(H.scan_ref(col(1), 1, ref), base:select(2, 6), dt, op, 7)
          H.assert_result(col(1), base:select(2, 1), dt, op, 7)

          base = cs.tensor(bv, { dtype = dt, device = dev })
          cs[FN[op]](base:narrow(2, 1, 2), 1, { reverse = opts.reverse, exclusive = opts.exclusive,
                                               out = base:narrow(2, 4, 2) })
          H.assert_result(H.scan_ref(block(1), 1, ref), base:narrow(2, 4, 2), dt, op, 7)
          H.assert_result(block(1), base:narrow(2, 1, 2), dt, op, 7)

          -- rows 1, 3, 5 scanned along dim 2 into rows 2, 4, 6
          base = cs.tensor(bv, { dtype = dt, device = dev })
          local rows = base:narrow(1, 1, 6):reshape({ 3, 2, 6 })
          local xv = { bv[1], bv[3], bv[5] }
          cs[FN[op]](rows:select(2, 1), 2, { reverse = opts.reverse, exclusive = opts.exclusive, out = rows:select(2, 2) })
          H.assert_result(H.scan_ref(xv, 2, ref), rows:select(2, 2), dt, op, 6)
          H.assert_result(xv, rows:select(2, 1), dt, op, 6)

          -- a carry-in read from column 3 while columns 4..5 are written
          base = cs.tensor(bv, { dtype = dt, device = dev })
          local init = dt == "float64" and base:select(2, 3) or base:select(2, 3):to("int64")
          local iv = col(3)
          local want = {}
          for i = 1, 7 do
            local r = H.scan_ref({ bv[i][1], bv[i][2] }, 1, { op = op, reverse = opts.reverse, exclusive = opts.exclusive,
                                                              initial = iv[i], dtype = dt })
            want[i] = r
          end
          cs[FN[op]](base:narrow(2, 1, 2), 2, { reverse = opts.reverse, exclusive = opts.exclusive, initial = init,
                                               out = base:narrow(2, 4, 2) })
          H.assert_result(want, base:narrow(2, 4, 2), dt, op, 2)
        end
      end
    end)
  end)

  it("an out sharing some of x's elements is still refused, and x is left as it was", function()
    local base = cs.arange(1, 31, { device = dev }):reshape({ 5, 6 })
    local before = base:clone()
    H.raises(function() base:narrow(2, 1, 3):cumsum(1, { out = base:narrow(2, 3, 3) }) end, { "out: overlaps x partially" })
    H.raises(function() base:select(2, 2):cumsum(1, { out = base:select(1, 2):narrow(1, 1, 5) }) end, { "out: overlaps x partially" })
    H.raises(function() base:narrow(2, 1, 2):cumsum(2, { initial = base:select(2, 2), out = base:narrow(2, 2, 2) }) end, { "overlap" })
    assert.tensor_equal(before, base)
  end)
end)

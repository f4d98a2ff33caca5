-- cummax and cummin against the plain-Lua oracle on both devices: every dtype, every dim of 1-D..4-D
-- tensors, views, reverse x exclusive x mask x reset, values from a small set so that ties are
-- everywhere; special values (NaN, +-inf, -0.0 with the signs of zeros checked), integer extremes,
-- bool, out = {values, indices} (poisoned, in place), determinism and misuse.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local DTYPES = { "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16" }
local FN = { max = "cummax", min = "cummin" }

local FLAGS = {}
for _, rev in ipairs({ false, true }) do
  for _, excl in ipairs({ false, true }) do
    for _, masked in ipairs({ false, true }) do
      for _, reset in ipairs({ false, true }) do
        FLAGS[#FLAGS + 1] = { reverse = rev, exclusive = excl, masked = masked, reset = reset }
      end
    end
  end
end

local function flag_text(f)
  local parts = {}
  for _, k in ipairs({ "reverse", "exclusive", "masked", "reset" }) do if f[k] then parts[#parts + 1] = k end end
  return #parts > 0 and table.concat(parts, " ") or "plain"
end

-- values from a small set: ties in almost every line
local function tie_table(rng, shape, dtype)
  return H.build(shape, function()
    if dtype == "bool" then return rng:bool(0.5) end
    return rng:int(-3, 3)
  end)
end

-- A poisoned {values, indices} pair for x.
local function poisoned_out(x)
  return { cs.full(x:shape(), H.poison(x.dtype), { dtype = x.dtype, device = x.device }),
           cs.full(x:shape(), -777, { dtype = "int64", device = x.device }) }
end

-- Scans x (values xv) with every flag combination into fresh and poisoned outputs and checks both
-- against the oracle; x, the mask and the reset must be unchanged.
local function check_all_flags(x, xv, dim, op, rng)
  local shape, dev = x:shape(), x.device
  for _, f in ipairs(FLAGS) do
    local mv = f.masked and H.random_mask(rng, shape, 0.7) or nil
    local rv = f.reset and H.random_mask(rng, shape, 0.25) or nil
    local mask = mv and cs.tensor(mv, { device = dev, dtype = "bool" })
    local reset = rv and cs.tensor(rv, { device = dev, dtype = "bool" })
    local ev, ei = H.scan_ref(xv, dim, { op = op, reverse = f.reverse, exclusive = f.exclusive, mask = mv, reset = rv,
                                         dtype = x.dtype })
    local opts = { reverse = f.reverse, exclusive = f.exclusive, mask = mask, reset = reset }
    local v, i = cs[FN[op]](x, dim, opts)
    assert.equal(x.dtype, v.dtype)
    assert.equal("int64", i.dtype)
    assert.same(shape, v:shape())
    H.assert_result(ev, v, x.dtype, op)
    H.assert_int_equal(ei, i)
    -- method form, negative dim, into poisoned outputs
    opts.out = poisoned_out(x)
    local nd = #shape
    local v2, i2 = x[FN[op]](x, dim - nd - 1, opts)
    assert.is_true(rawequal(v2, opts.out[1]) and rawequal(i2, opts.out[2]), "the results are out's tensors")
    H.assert_result(ev, v2, x.dtype, op)
    H.assert_int_equal(ei, i2)
    assert.same(xv, x:totable())
    if mask then assert.same(mv, mask:totable()) end
    if reset then assert.same(rv, reset:totable()) end
  end
end

H.each_device("cummax and cummin along every dim", function(dev, it)
  for _, shape in ipairs({ { 7 }, { 5, 6 }, { 3, 4, 5 }, { 2, 3, 4, 5 } }) do
    for dim = 1, #shape do
      for _, op in ipairs({ "max", "min" }) do
        for _, dtype in ipairs(DTYPES) do
          local name = ("%s %s dim %d of %s, every flag"):format(FN[op], dtype, dim, table.concat(shape, "x"))
          it(name, function()
            H.with_rng(name .. dev, function(rng)
              local x = cs.tensor(tie_table(rng, shape, dtype), { dtype = dtype, device = dev })
              check_all_flags(x, x:totable(), dim, op, rng)
            end)
          end)
        end
      end
    end
  end
end)

-- Views: x, and the mask, reset and outputs made the same way, are not contiguous.
H.each_device("cummax and cummin of views", function(dev, it)
  for _, v in ipairs(H.VIEWS) do
    for _, op in ipairs({ "max", "min" }) do
      for _, dtype in ipairs({ "float32", "int64", "bool" }) do
        local name = ("%s %s of a %s view, every dim and flag"):format(FN[op], dtype, v.name)
        it(name, function()
          H.with_rng(name .. dev, function(rng)
            local x = v.make(cs.tensor(tie_table(rng, v.base, dtype), { dtype = dtype, device = dev }))
            local xv = x:totable()
            for dim = 1, x:dim() do
              local f = FLAGS[rng:int(1, #FLAGS)]
              local view_of = function(t) return v.make(cs.full(v.base, t, { device = dev })) end
              local mask, reset = view_of(true), view_of(false)
              mask:copy(cs.tensor(H.random_mask(rng, x:shape(), 0.7), { device = dev }))
              reset:copy(cs.tensor(H.random_mask(rng, x:shape(), 0.3), { device = dev }))
              local out = { v.make(cs.full(v.base, H.poison(dtype), { dtype = dtype, device = dev })),
                            v.make(cs.full(v.base, -5, { dtype = "int64", device = dev })) }
              local opts = { reverse = f.reverse, exclusive = f.exclusive, mask = f.masked and mask or nil,
                             reset = f.reset and reset or nil, out = out }
              x[FN[op]](x, dim, opts)
              local ev, ei = H.scan_ref(xv, dim, { op = op, reverse = f.reverse, exclusive = f.exclusive, dtype = dtype,
                                                   mask = opts.mask and mask:totable(), reset = opts.reset and reset:totable() })
              H.assert_result(ev, out[1], dtype, op)
              H.assert_int_equal(ei, out[2])
            end
          end)
        end)
      end
    end
  end
end)

H.each_device("cummax and cummin: special values and ties", function(dev, it)
  local nan, inf = 0 / 0, math.huge

  it("a NaN is the maximum and the minimum from where it appears; each later NaN takes over its index", function()
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      for _, l in ipairs(H.line_layouts({ 1, nan, 5, nan, -inf, 2 }, dev, dtype)) do
        local kind, x, dim = l[1], l[2], l[3]
        for _, op in ipairs({ "cummax", "cummin" }) do
          local v, i = x[op](x, dim)
          local vals = H.first_line(v, kind)
          assert.equal(1, vals[1], dtype .. " " .. kind)
          for k = 2, 6 do assert.is_true(vals[k] ~= vals[k], ("%s %s %s: element %d"):format(op, dtype, kind, k)) end
          assert.same({ 1, 2, 2, 4, 4, 4 }, H.first_line(i, kind))
          -- reversed: the NaN met first from the end is element 4, then element 2 takes over
          v, i = x[op](x, dim, { reverse = true })
          assert.same(op == "cummax" and { 2, 2, 4, 4, 6, 6 } or { 2, 2, 4, 4, 5, 6 }, H.first_line(i, kind))
        end
      end
    end
  end)

  it("+-inf are values like any other; a line of -inf has its own maximum", function()
    local x = cs.tensor({ -inf, -inf, inf, 3, inf }, { device = dev })
    local v, i = x:cummax(1)
    assert.tensor_equal({ -inf, -inf, inf, inf, inf }, v)
    assert.tensor_equal({ 1, 2, 3, 3, 5 }, i)
    v, i = x:cummin(1)
    assert.tensor_equal({ -inf, -inf, -inf, -inf, -inf }, v)
    assert.tensor_equal({ 1, 2, 2, 2, 2 }, i)
  end)

  it("-0.0 and +0.0 tie: the later zero is taken, with its sign", function()
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      local x = cs.tensor({ 0.0, -0.0, 0.0, -0.0 }, { device = dev, dtype = dtype })
      for _, op in ipairs({ "cummax", "cummin" }) do
        local v, i = x[op](x, 1)
        local vals = v:totable()
        assert.same({ 1, 2, 3, 4 }, i:totable())
        assert.same({ inf, -inf, inf, -inf }, { 1 / vals[1], 1 / vals[2], 1 / vals[3], 1 / vals[4] }, op .. " " .. dtype)
        v, i = x[op](x, 1, { reverse = true })
        vals = v:totable()
        assert.same({ 1, 2, 3, 4 }, i:totable())
        assert.same({ inf, -inf, inf, -inf }, { 1 / vals[1], 1 / vals[2], 1 / vals[3], 1 / vals[4] }, op .. " reversed")
      end
    end
  end)

  it("ties take the later element in the scan's order", function()
    local x = cs.tensor({ { 2, 2, 2, 2 }, { 1, 3, 3, 1 } }, { device = dev, dtype = "int32" })
    local _, i = x:cummax(2)
    assert.tensor_equal({ { 1, 2, 3, 4 }, { 1, 2, 3, 3 } }, i)
    _, i = x:cummax(2, { reverse = true })
    assert.tensor_equal({ { 1, 2, 3, 4 }, { 2, 2, 3, 4 } }, i)
    _, i = x:cummin(2)
    assert.tensor_equal({ { 1, 2, 3, 4 }, { 1, 1, 1, 4 } }, i)
  end)

  it("integer extremes: the dtype's lowest and highest values, and the identity where nothing is taken", function()
    local lo64, hi64 = -0x8000000000000000LL, 0x7fffffffffffffffLL
    local x = cs.tensor({ lo64, 5, hi64, lo64 }, { device = dev, dtype = "int64" })
    local v, i = x:cummax(1)
    assert.same({ lo64, 5LL, hi64, hi64 }, v:totable({ exact = true }))
    assert.tensor_equal({ 1, 2, 3, 3 }, i)
    v, i = x:cummin(1, { exclusive = true })
    assert.same({ hi64, lo64, lo64, lo64 }, v:totable({ exact = true }))
    assert.tensor_equal({ 0, 1, 1, 1 }, i)
    local x32 = cs.tensor({ 7, -2147483648, 2147483647 }, { device = dev, dtype = "int32" })
    v, i = x32:cummax(1, { exclusive = true, mask = cs.tensor({ false, true, true }, { device = dev }) })
    assert.tensor_equal({ -2147483648, -2147483648, -2147483648 }, v)
    assert.tensor_equal({ 0, 0, 2 }, i)
  end)

  it("bool: true is the larger; the identities are false and true", function()
    local x = cs.tensor({ false, true, false, true }, { device = dev })
    local v, i = x:cummax(1)
    assert.equal("bool", v.dtype)
    assert.tensor_equal({ false, true, true, true }, v)
    assert.tensor_equal({ 1, 2, 2, 4 }, i)
    v, i = x:cummin(1, { exclusive = true })
    assert.tensor_equal({ true, false, false, false }, v)
    assert.tensor_equal({ 0, 1, 1, 3 }, i)
  end)

  it("masked-out elements are skipped, NaN and inf under a false mask included", function()
    local x = cs.tensor({ nan, 4, inf, 1, -inf }, { device = dev })
    local m = cs.tensor({ false, true, false, true, false }, { device = dev })
    local v, i = x:cummax(1, { mask = m })
    assert.tensor_equal({ -inf, 4, 4, 4, 4 }, v)
    assert.tensor_equal({ 0, 2, 2, 2, 2 }, i)
    v, i = x:cummin(1, { mask = m, reverse = true })
    assert.tensor_equal({ 1, 1, 1, 1, inf }, v)
    assert.tensor_equal({ 4, 4, 4, 4, 0 }, i)
  end)
end)

H.each_device("cummax and cummin: out, in place, 0-d and empty", function(dev, it)
  it("scan in place into x itself with the indices beside it", function()
    local x = cs.tensor({ { 3, 1, 4, 1, 5 }, { 9, 2, 6, 5, 3 } }, { device = dev })
    local i = cs.empty({ 2, 5 }, { dtype = "int64", device = dev })
    local v, i2 = x:cummax(2, { out = { x, i } })
    assert.is_true(rawequal(v, x) and rawequal(i2, i))
    assert.tensor_equal({ { 3, 3, 4, 4, 5 }, { 9, 9, 9, 9, 9 } }, x)
    assert.tensor_equal({ { 1, 1, 3, 3, 5 }, { 1, 1, 1, 1, 1 } }, i)
  end)

  it("0-d tensors are lines of one element; empty tensors give empty results", function()
    local v, i = cs.tensor(2.5, { device = dev }):cummin(1)
    assert.equal(2.5, v:item())
    assert.equal(1, i:item())
    v, i = cs.tensor(2.5, { device = dev }):cummax(-1, { exclusive = true })
    assert.equal(-math.huge, v:item())
    assert.equal(0, i:item())
    v, i = cs.zeros({ 3, 0 }, { device = dev }):cummax(2)
    assert.same({ 3, 0 }, v:shape())
    assert.same({ 3, 0 }, i:shape())
  end)

  it("give the same bits on every run, long lines and columns included", function()
    local x = cs.rand({ 300, 2000 }, { seed = 5, device = dev }):mul(8):to("int32"):to("float32")
    x:narrow(1, 7, 1):narrow(2, 50, 1):fill(0 / 0)
    x:narrow(1, 100, 1):narrow(2, 1000, 1):fill(0 / 0)
    local m = cs.rand({ 300, 2000 }, { seed = 6, device = dev }):lt(0.8)
    for _, dim in ipairs({ 1, 2 }) do
      local v, i = x:cummax(dim, { mask = m, reverse = dim == 1 })
      local bv, bi = H.bits(v), H.bits(i)
      for _ = 1, 3 do
        v, i = x:cummax(dim, { mask = m, reverse = dim == 1 })
        assert.is_true(bv == H.bits(v) and bi == H.bits(i), "cummax bits changed between runs")
      end
    end
  end)
end)

H.each_device("cummax and cummin misuse", function(dev, it)
  it("raise cuscan: errors that name the argument, and write nothing", function()
    local x = cs.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev })
    local v, i = cs.full({ 2, 2 }, 7, { device = dev }), cs.full({ 2, 2 }, 7, { dtype = "int64", device = dev })
    H.raises(function() x:cummax(2, { out = v }) end, { "cummax: out: expected a table {values, indices}" })
    H.raises(function() x:cummax(2, { out = { v } }) end, { "cummax: out: expected a table {values, indices}" })
    H.raises(function() x:cummax(2, { out = { v, v:clone() } }) end, { "cummax: out[2]: expected an int64 tensor for the indices, got float32" })
    H.raises(function() x:cummin(2, { out = { i, i:clone() } }) end, { "cummin: out[1]: expected dtype float32" })
    H.raises(function() x:cummax(2, { out = { v, cs.zeros({ 2, 3 }, { dtype = "int64", device = dev }) } }) end, { "out[2]: expected x's shape 2x2" })
    H.raises(function() x:cummax(2, { dtype = "float64" }) end, { "cummax: opts: unknown option 'dtype'" })
    H.raises(function() x:cummax(3) end, { "cummax: dim: 3 is out of range" })
    H.raises(function() x:cummin(1, { mask = x }) end, { "cummin: mask: expected a bool tensor, got float32" })
    H.raises(function() x:cummin(1, { reset = x:gt(1):narrow(1, 1, 1) }) end, { "cummin: reset: expected x's shape 2x2, got 1x2" })
    assert.tensor_equal(cs.full({ 2, 2 }, 7), v)
    assert.tensor_equal(cs.full({ 2, 2 }, 7, { dtype = "int64" }), i)
    -- the indices may overlap nothing: C says so, naming them
    local x64 = cs.tensor({ 1, 2, 3 }, { dtype = "int64", device = dev })
    H.raises(function() x64:cummax(1, { out = { x64:clone(), x64 } }) end, { "cummax: indices: must not overlap x" })
    local both = cs.zeros({ 2, 2 }, { dtype = "int64", device = dev })
    H.raises(function() both:cummax(1, { out = { both, both } }) end, { "indices: must not overlap" })
    assert.tensor_equal({ 1, 2, 3 }, x64)
  end)
end)

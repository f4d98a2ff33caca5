-- Segmented scans on both devices: opts.reset on every op (cumsum, cumprod, cummax, cummin,
-- logcumsumexp) against the plain-Lua oracle, with the edge cases of the reset rule (a reset at the
-- first element, all true, none true, reset == mask, reverse + exclusive + reset), resets given as
-- views, and segment ids: cs.segment_ids_to_reset and opts.segments against sums written from the
-- segments themselves (not from a reset), in both directions. Misuse last.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local FN = { sum = "cumsum", prod = "cumprod", max = "cummax", min = "cummin", lse = "logcumsumexp" }
local DTYPES = { sum = { "float32", "int32", "int64", "bool" }, prod = { "float64", "int64" },
                 max = { "float32", "int32", "bool" }, min = { "float64", "int64", "bfloat16" },
                 lse = { "float32", "float16" } }
local OPS = { "sum", "prod", "max", "min", "lse" }

-- x's values for op: small integers (exact in every dtype, ties for max and min), +-[0.5, 1.5) for
-- products, [-3, 3) for logsumexp
local function random_x(rng, shape, dtype, op, dev)
  local t = H.build(shape, function()
    if dtype == "bool" then return rng:bool(0.5) end
    if op == "prod" then return (rng:bool(0.5) and 1 or -1) * rng:uniform(0.5, 1.5) end
    if op == "lse" then return rng:uniform(-3, 3) end
    return rng:int(-4, 4)
  end)
  return cs.tensor(t, { dtype = dtype, device = dev })
end

local function default_out(op, dtype)
  if dtype == "bool" and (op == "sum" or op == "prod") then return "int64" end
  return dtype
end

-- Runs op on x along dim with opts (mask, reset tensors) and checks the result (and indices)
-- against the oracle given the same masks as tables.
local function check(x, dim, op, opts, label)
  local xv = x:totable()
  local odt = default_out(op, x.dtype)
  local ref = { op = op, reverse = opts.reverse, exclusive = opts.exclusive, dtype = odt,
                mask = opts.mask and opts.mask:totable(), reset = opts.reset and opts.reset:totable() }
  local want, want_i = H.scan_ref(xv, dim, ref)
  local y, i = x[FN[op]](x, dim, opts)
  local len = x:dim() == 0 and 1 or x:size(dim)
  H.replay(0, label, function()
    H.assert_result(want, y, odt, op, len)
    if want_i then H.assert_int_equal(want_i, i) end
  end)
end

H.each_device("segmented scans (opts.reset)", function(dev, it)
  for _, op in ipairs(OPS) do
    for _, dtype in ipairs(DTYPES[op]) do
      local name = ("%s %s with random resets on rows and columns, every flag"):format(FN[op], dtype)
      it(name, function()
        H.with_rng(name .. dev, function(rng)
          for _, shape in ipairs({ { 4, 37 }, { 37, 4 }, { 3, 5, 6 } }) do
            local x = random_x(rng, shape, dtype, op, dev)
            for dim = 1, #shape do
              for k = 0, 7 do
                local reset = cs.tensor(H.random_mask(rng, shape, 0.2), { device = dev })
                local mask = k >= 4 and cs.tensor(H.random_mask(rng, shape, 0.7), { device = dev }) or nil
                local opts = { reverse = k % 2 == 1, exclusive = math.floor(k / 2) % 2 == 1, mask = mask, reset = reset }
                check(x, dim, op, opts, ("shape %s dim %d flags %d"):format(table.concat(shape, "x"), dim, k))
              end
            end
          end
        end)
      end)
    end

    it(("%s: a reset at the first element, everywhere, nowhere, equal to the mask, reversed and exclusive"):format(FN[op]), function()
      H.with_rng(op .. " reset edges" .. dev, function(rng)
        local dtype = DTYPES[op][1]
        local x = random_x(rng, { 3, 11 }, dtype, op, dev)
        local first = cs.tensor(H.build({ 3, 11 }, function(i) return (i - 1) % 11 == 0 end), { device = dev })
        local all, none = cs.full({ 3, 11 }, true, { device = dev }), cs.full({ 3, 11 }, false, { device = dev })
        local random = cs.tensor(H.random_mask(rng, { 3, 11 }, 0.3), { device = dev })
        for _, f in ipairs({ {}, { reverse = true }, { exclusive = true }, { reverse = true, exclusive = true } }) do
          for rname, r in pairs({ first = first, all = all, none = none }) do
            check(x, 2, op, { reverse = f.reverse, exclusive = f.exclusive, reset = r }, rname)
          end
          check(x, 2, op, { reverse = f.reverse, exclusive = f.exclusive, reset = random, mask = random }, "reset == mask")
        end
        -- no reset and a reset of none, or of the first element only, give the plain scan
        local plain = x[FN[op]](x, 2)
        assert.equal(H.bits(plain), H.bits(x[FN[op]](x, 2, { reset = none })))
        assert.equal(H.bits(plain), H.bits(x[FN[op]](x, 2, { reset = first })))
      end)
    end)
  end

  it("resets given as views: transposed, narrowed, stride 2; in place", function()
    H.with_rng("reset views" .. dev, function(rng)
      local xb = random_x(rng, { 8, 10 }, "float32", "sum", dev)
      local rb = cs.tensor(H.random_mask(rng, { 10, 8 }, 0.3), { device = dev })
      local x, r = xb:transpose(1, 2), rb
      check(x, 1, "sum", { reset = r }, "transposed x, contiguous reset")
      check(xb, 2, "max", { reset = rb:transpose(1, 2), reverse = true }, "transposed reset")
      local r3 = cs.tensor(H.random_mask(rng, { 8, 10, 2 }, 0.3), { device = dev })
      check(xb, 1, "sum", { reset = r3:select(3, 2), exclusive = true }, "stride-2 reset")
      check(xb:narrow(2, 3, 6), 2, "lse", { reset = rb:transpose(1, 2):narrow(2, 2, 6) }, "narrowed")
      -- in place, the reset beside it
      local y = xb:clone()
      local want = xb:cumsum(2, { reset = rb:transpose(1, 2) })
      y:cumsum(2, { reset = rb:transpose(1, 2), out = y })
      assert.tensor_equal(want, y)
    end)
  end)
end)

-- A line of n segment ids: runs of equal ids, an id now and then seen again later.
local function ids_line(rng, n)
  local ids, id = {}, rng:int(-3, 3)
  for k = 1, n do
    if k > 1 and rng:bool(0.3) then id = id + rng:pick({ -2, -1, 1, 5 }) end
    ids[k] = id
  end
  return ids
end

H.each_device("segment ids", function(dev, it)
  it("segment_ids_to_reset marks the first element of each run in the scan's direction", function()
    for _, dtype in ipairs({ "int32", "int64" }) do
      local T, F = true, false
      local ids = cs.tensor({ { 4, 4, 7, 7, 7, 4, 1 }, { 4, 0, 7, 0, 7, 4, 0 } }, { dtype = dtype, device = dev })
      assert.tensor_equal({ { T, F, T, F, F, T, T }, { T, T, T, T, T, T, T } }, cs.segment_ids_to_reset(ids, 2))
      assert.tensor_equal({ { F, T, F, F, T, T, T }, { T, T, T, T, T, T, T } },
                          cs.segment_ids_to_reset(ids, -1, { reverse = true }))
      assert.tensor_equal({ { T, T, T, T, T, T, T }, { F, T, F, T, F, F, T } }, cs.segment_ids_to_reset(ids, 1))
      local r = cs.segment_ids_to_reset(ids, 1, { reverse = true })
      assert.equal("bool", r.dtype)
      assert.equal(dev, r.device)
      assert.tensor_equal({ { F, T, F, T, F, F, T }, { T, T, T, T, T, T, T } }, r)
      assert.same({ 4, 4, 7, 7, 7, 4, 1 }, ids:totable()[1])
    end
    assert.tensor_equal(true, cs.segment_ids_to_reset(cs.tensor(3, { dtype = "int32", device = dev }), 1))
    assert.same({ 2, 0 }, cs.segment_ids_to_reset(cs.zeros({ 2, 0 }, { dtype = "int64", device = dev }), 2):shape())
  end)

  it("opts.segments gives each run of equal ids its own scan, in either direction", function()
    H.with_rng("segments" .. dev, function(rng)
      local B, N = 5, 60
      local lines, xs = {}, {}
      for b = 1, B do
        lines[b] = ids_line(rng, N)
        xs[b] = {}
        for k = 1, N do xs[b][k] = rng:int(-9, 9) end
      end
      local ids = cs.tensor(lines, { dtype = "int64", device = dev })
      local x = cs.tensor(xs, { dtype = "float64", device = dev })
      -- the sums written from the runs: forward from the run's first element, reverse to its last
      local fwd, rev = {}, {}
      for b = 1, B do
        fwd[b], rev[b] = {}, {}
        for k = 1, N do
          local s, j = 0, k
          while j >= 1 and lines[b][j] == lines[b][k] do s = s + xs[b][j]; j = j - 1 end
          fwd[b][k] = s
          s, j = 0, k
          while j <= N and lines[b][j] == lines[b][k] do s = s + xs[b][j]; j = j + 1 end
          rev[b][k] = s
        end
      end
      assert.tensor_equal(fwd, x:cumsum(2, { segments = ids }))
      assert.tensor_equal(rev, x:cumsum(2, { segments = ids, reverse = true }))
      -- the same through the transposed layout and int32 ids
      assert.tensor_equal(rev, x:transpose(1, 2):contiguous():cumsum(1, { segments = ids:transpose(1, 2):to("int32"), reverse = true }):transpose(1, 2))
      -- and every op: segments is the reset segment_ids_to_reset gives
      for _, op in ipairs(OPS) do
        for _, reverse in ipairs({ false, true }) do
          local r = cs.segment_ids_to_reset(ids, 2, { reverse = reverse })
          local y1, i1 = x[FN[op]](x, 2, { segments = ids, reverse = reverse, exclusive = true })
          local y2, i2 = x[FN[op]](x, 2, { reset = r, reverse = reverse, exclusive = true })
          assert.equal(H.bits(y2), H.bits(y1))
          if i1 then assert.equal(H.bits(i2), H.bits(i1)) end
        end
      end
    end)
  end)
end)

H.each_device("segmented scan misuse", function(dev, it)
  it("raises cuscan: errors that name the argument, and writes nothing", function()
    local x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev })
    local r = x:gt(2)
    local ids = cs.tensor({ { 1, 1, 2 }, { 3, 3, 3 } }, { dtype = "int64", device = dev })
    H.raises(function() x:cumsum(2, { reset = x }) end, { "cumsum: reset: expected a bool tensor, got float32" })
    H.raises(function() x:cumprod(2, { reset = r:transpose(1, 2) }) end, { "cumprod: reset: expected x's shape 2x3, got 3x2" })
    H.raises(function() x:cummax(2, { reset = 1 }) end, { "cummax: reset: expected a bool tensor, got number 1" })
    H.raises(function() x:cumsum(2, { reset = r, segments = ids }) end, { "cumsum: opts: give reset or segments, not both" })
    H.raises(function() x:cumsum(2, { segments = x }) end, { "cumsum: segments: expected an int32 or int64 tensor of segment ids, got float32" })
    H.raises(function() x:logcumsumexp(2, { segments = ids:narrow(2, 1, 2) }) end, { "logcumsumexp: segments: expected x's shape 2x3, got 2x2" })
    H.raises(function() cs.segment_ids_to_reset(x, 1) end, { "segment_ids_to_reset: ids: expected an int32 or int64 tensor of segment ids, got float32" })
    H.raises(function() cs.segment_ids_to_reset(ids, 3) end, { "segment_ids_to_reset: dim: 3 is out of range" })
    H.raises(function() cs.segment_ids_to_reset(ids, 1, { reversed = true }) end, { "segment_ids_to_reset: opts: unknown option 'reversed' (expected reverse)" })
    H.raises(function() cs.segment_ids_to_reset(nil, 1) end, { "segment_ids_to_reset: ids: expected a tensor, got nil" })
    -- out must not overlap the reset it reads
    local b = cs.tensor({ true, false, true }, { device = dev })
    H.raises(function() b:cummax(1, { reset = b, out = { b, cs.zeros({ 3 }, { dtype = "int64", device = dev }) } }) end, { "cummax: out: must not overlap reset" })
    assert.tensor_equal({ true, false, true }, b)
    assert.tensor_equal({ { 1, 2, 3 }, { 4, 5, 6 } }, x)
  end)
end)

describe("segmented scan misuse across devices #cuda", function()
  local it = H.cuda_it()
  it("a reset or segments on the other device are refused", function()
    for _, pair in ipairs({ { "cpu", "cuda" }, { "cuda", "cpu" } }) do
      local x = cs.ones({ 4 }, { device = pair[1] })
      local r = cs.ones({ 4 }, { device = pair[2] }):gt(0)
      H.raises(function() x:cumsum(1, { reset = r }) end, { "cumsum: reset: expected a tensor on x's device" })
      H.raises(function() x:cummin(1, { segments = r:to("int32") }) end, { "cummin: segments: expected a tensor on x's device" })
    end
  end)
end)

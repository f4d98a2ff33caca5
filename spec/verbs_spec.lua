-- The tensor verbs of torch7 and PyTorch, 1-based: flip, permute, expand, squeeze, unsqueeze,
-- cs.empty, cs.randn and cs.where, on both devices, against plain-Lua index arithmetic on fresh
-- random inputs.
local ffi = require("ffi")
local bit = require("bit")
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local nan = 0 / 0

-- A random float64 tensor of the shape on dev, distinct values, and its nested table.
local function random_input(rng, shape, dev, dtype)
  local t = H.build(shape, function() return rng:int(-1000, 1000) end)
  local x
  if #shape == 0 then x = cs.tensor(t, { dtype = dtype or "float64", device = dev })
  else x = cs.tensor(H.flatten(t, shape), { dtype = dtype or "float64", device = dev }):reshape(shape) end
  return x, x:totable()
end

local function random_shape(rng, max_dims)
  local shape = {}
  for d = 1, rng:int(1, max_dims or 4) do shape[d] = rng:int(rng:bool(0.1) and 0 or 1, 5) end
  return shape
end

-- The element of nested table t at the 1-based multi-index idx.
local function at(t, idx)
  for _, i in ipairs(idx) do t = t[i] end
  return t
end

-- A nested table of the shape whose element at idx is f(idx).
local function tabulate(shape, f)
  local strides, s = {}, 1
  for d = #shape, 1, -1 do strides[d] = s; s = s * shape[d] end
  return H.build(shape, function(k)
    local idx, r = {}, k - 1
    for d = 1, #shape do idx[d] = math.floor(r / strides[d]) + 1; r = r % strides[d] end
    return f(idx)
  end)
end

-- Philox4x32-10 and Box-Muller written again in Lua from their definitions (the oracle of randn).
local function mulhilo(a, b)
  local p = ffi.cast("uint64_t", a) * b
  return tonumber(bit.rshift(p, 32)), tonumber(bit.band(p, 0xffffffffULL))
end
local function u32(v) return v % 4294967296 end
local function philox(c, k0, k1)
  for _ = 1, 10 do
    local hi0, lo0 = mulhilo(0xD2511F53, c[1])
    local hi1, lo1 = mulhilo(0xCD9E8D57, c[3])
    c[1], c[2], c[3], c[4] = u32(bit.bxor(hi1, c[2], k0)), lo1, u32(bit.bxor(hi0, c[4], k1)), lo0
    k0, k1 = u32(k0 + 0x9E3779B9), u32(k1 + 0xBB67AE85)
  end
  return c
end
local function normal_ref(index, seed)
  local c = philox({ index, 0, 1, 0 }, u32(seed), 0)
  -- the top 53 of the 64 bits of two words, exactly
  local a = c[1] * 2 ^ 21 + math.floor(c[2] / 2048)
  local b = c[3] * 2 ^ 21 + math.floor(c[4] / 2048)
  local u1, u2 = (a + 1) / 2 ^ 53, b / 2 ^ 53
  return math.sqrt(-2 * math.log(u1)) * math.cos(6.283185307179586 * u2)
end

H.each_device("flip, permute, squeeze, unsqueeze", function(dev, it)
  it("flip reverses the elements along the dims given, into a new tensor of any dtype", function()
    H.with_rng("flip " .. dev, function(rng)
      for _ = 1, 40 do
        local shape = random_shape(rng)
        local x, t = random_input(rng, shape, dev, rng:pick(cs.dtypes))
        if #shape >= 2 and rng:bool() then
          x = x:transpose(1, 2)
          shape[1], shape[2] = shape[2], shape[1]
          t = x:totable()
        end
        local dims, flipped = {}, {}
        for d = 1, #shape do
          if rng:bool() then
            dims[#dims + 1] = rng:bool() and d or d - #shape - 1
            flipped[d] = true
          end
        end
        local y = x:flip(dims)
        assert.equal(x.dtype, y.dtype)
        assert.same(shape, y:shape())
        local want = tabulate(shape, function(idx)
          local src = {}
          for d, i in ipairs(idx) do src[d] = flipped[d] and shape[d] + 1 - i or i end
          return at(t, src)
        end)
        if H.numel(shape) > 0 then assert.same(want, y:totable()) end
      end
    end)
  end)

  it("flip takes one dim, a table or separate dims, and returns a copy", function()
    local x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev })
    assert.same({ { 4, 5, 6 }, { 1, 2, 3 } }, x:flip(1):totable())
    assert.same({ { 3, 2, 1 }, { 6, 5, 4 } }, x:flip(-1):totable())
    assert.same({ { 6, 5, 4 }, { 3, 2, 1 } }, x:flip(1, 2):totable())
    assert.same(x:totable(), x:flip({}):totable())
    local y = x:flip({ 2 })
    y:fill(0)
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, x:totable())
    assert.equal(7, cs.tensor(7, { device = dev }):flip(1):item())
    -- flipping, scanning and flipping back is a reverse scan
    assert.tensor_equal(x:cumsum(2, { reverse = true }), x:flip(2):cumsum(2):flip(2))
    H.raises(function() x:flip({ 1, -2 }) end, { "flip: dims: dim 1 is named twice" })
    H.raises(function() x:flip(3) end, { "flip: dims: 3 is out of range" })
    H.raises(function() x:flip({ 1, "a" }) end, { "flip: dims[2]: expected an integer dim" })
    -- as in PyTorch, dims are required ({} flips nothing)
    H.raises(function() x:flip() end, { "flip: dims: expected a dim, a table of dims or separate dims, got nothing" })
  end)

  it("permute is a view with the dims in the order given", function()
    H.with_rng("permute " .. dev, function(rng)
      for _ = 1, 30 do
        local shape = random_shape(rng)
        local x, t = random_input(rng, shape, dev)
        local perm = {}
        for d = 1, #shape do perm[d] = d end
        for d = #shape, 2, -1 do
          local j = rng:int(1, d)
          perm[d], perm[j] = perm[j], perm[d]
        end
        local y = rng:bool() and x:permute(perm) or x:permute(unpack(perm))
        local nshape = {}
        for i, d in ipairs(perm) do nshape[i] = shape[d] end
        assert.same(nshape, y:shape())
        for i, d in ipairs(perm) do assert.equal(x:stride(d), y:stride(i)) end
        local want = tabulate(nshape, function(idx)
          local src = {}
          for i, d in ipairs(perm) do src[d] = idx[i] end
          return at(t, src)
        end)
        if H.numel(shape) > 0 then assert.same(want, y:totable()) end
      end
    end)
  end)

  it("permute shares storage and refuses what is not a permutation", function()
    local x = cs.zeros({ 2, 3, 4 }, { device = dev })
    local y = x:permute(3, 1, 2)
    assert.same({ 4, 2, 3 }, y:shape())
    y:select(1, 4):fill(1)
    assert.equal(6, x:select(3, 4):sum())
    assert.same({ 3, 4, 2 }, x:permute(-2, -1, -3):shape())
    H.raises(function() x:permute(1, 2) end, { "permute: dims: expected 3 dims (a permutation of 1..3), got 2" })
    H.raises(function() x:permute(1, 2, 2) end, { "permute: dims: dim 2 is named twice" })
    H.raises(function() x:permute(1, 2, 4) end, { "permute: dims[3]: 4 is out of range" })
    H.raises(function() x:permute({ 1, 2, 3 }, 1) end, { "permute: dims: expected one table or separate numbers" })
  end)

  it("squeeze and unsqueeze remove and add dims of size 1 as views", function()
    local x = cs.arange(6, { device = dev }):reshape({ 1, 2, 1, 3 })
    assert.same({ 2, 3 }, x:squeeze():shape())
    assert.same({ 2, 1, 3 }, x:squeeze(1):shape())
    assert.same({ 1, 2, 3 }, x:squeeze(-2):shape())
    assert.same({ 1, 2, 1, 3 }, x:squeeze(2):shape())   -- size 2: unchanged, as PyTorch
    assert.same({}, cs.ones({ 1, 1 }, { device = dev }):squeeze():shape())
    assert.same({}, cs.tensor(3, { device = dev }):squeeze(1):shape())
    local y = cs.arange(6, { device = dev }):reshape({ 2, 3 })
    assert.same({ 1, 2, 3 }, y:unsqueeze(1):shape())
    assert.same({ 2, 1, 3 }, y:unsqueeze(2):shape())
    assert.same({ 2, 3, 1 }, y:unsqueeze(3):shape())
    assert.same({ 2, 3, 1 }, y:unsqueeze(-1):shape())
    assert.same({ 2, 1, 3 }, y:unsqueeze(-2):shape())
    assert.same({ 1 }, cs.tensor(5, { device = dev }):unsqueeze(1):shape())
    assert.same({ { { 0, 1, 2 } }, { { 3, 4, 5 } } }, y:unsqueeze(2):totable())
    assert.is_true(y:unsqueeze(1):is_contiguous())
    y:unsqueeze(3):squeeze(3):select(1, 2):fill(9)
    assert.same({ { 0, 1, 2 }, { 9, 9, 9 } }, y:totable())
    -- a scan along a dim of size 1 added by unsqueeze is the input itself
    assert.tensor_equal(y:unsqueeze(2), y:unsqueeze(2):cumsum(2))
    H.raises(function() y:unsqueeze(4) end, { "unsqueeze: dim: 4 is out of range" })
    H.raises(function() y:unsqueeze(0) end, { "unsqueeze: dim: 0 is out of range", "dims are 1-based" })
    H.raises(function() cs.zeros({ 1, 1, 1, 1, 1, 1, 1, 1 }, { device = dev }):unsqueeze(1) end, { "unsqueeze: x: has 8 dims already" })
    H.raises(function() y:squeeze(3) end, { "squeeze: dim: 3 is out of range" })
  end)
end)

H.each_device("expand", function(dev, it)
  it("repeats dims of size 1 through stride 0, and scans read it like any view", function()
    H.with_rng("expand " .. dev, function(rng)
      for _ = 1, 30 do
        local shape = random_shape(rng, 3)
        local sizes, base = {}, {}
        for d = 1, #shape do
          if rng:bool(0.4) then base[d] = 1 else base[d] = shape[d] end
        end
        local x = random_input(rng, base, dev)
        local lead = rng:int(0, 1)
        for i = 1, lead do sizes[i] = rng:int(1, 3) end
        for d = 1, #shape do sizes[lead + d] = (base[d] == shape[d] and rng:bool()) and -1 or shape[d] end
        local e = x:expand(sizes)
        local full = {}
        for i, s in ipairs(sizes) do full[i] = s == -1 and base[i - lead] or s end
        assert.same(full, e:shape())
        local c = e:clone()
        if c:numel() > 0 then assert.is_true(c:is_contiguous()) end
        for d, s in ipairs(full) do
          if s > 1 and (d <= lead or base[d - lead] == 1) then assert.equal(0, e:stride(d)) end
        end
        if H.numel(full) > 0 then
          for dim = 1, #full do
            local opts = { reverse = rng:bool(), exclusive = rng:bool() }
            if rng:bool() then opts.mask = cs.rand(full, { seed = rng:next(), device = dev }):lt(0.5) end
            assert.tensor_equal(c:cumsum(dim, opts), e:cumsum(dim, opts))
            assert.tensor_equal(H.scan_ref(c:totable(), dim, { reverse = opts.reverse, exclusive = opts.exclusive,
              mask = opts.mask and opts.mask:totable() }), e:cumsum(dim, opts))
          end
          assert.tensor_equal(c * 2 + 1, e * 2 + 1)
        end
      end
    end)
  end)

  it("cannot be written: out =, fill, copy and in-place scans are errors that change nothing", function()
    local x = cs.tensor({ { 1 }, { 2 } }, { device = dev })
    local e = x:expand(2, 3)
    assert.same({ { 1, 1, 1 }, { 2, 2, 2 } }, e:totable())
    local msg = "cannot write into an expanded view (dim 2 of size 3 has stride 0"
    H.raises(function() e:fill(5) end, { "fill: x: " .. msg })
    H.raises(function() e:copy(cs.zeros({ 2, 3 }, { device = dev })) end, { "copy: x: " .. msg })
    H.raises(function() cs.zeros({ 2, 3 }, { device = dev }):cumsum(2, { out = e }) end, { "cumsum: out: " .. msg })
    H.raises(function() e:cumprod(1, { out = e }) end, { "cumprod: out: " .. msg })
    H.raises(function() e:select(1, 1):fill(0) end, { "fill: x: cannot write into an expanded view" })
    assert.same({ { 1 }, { 2 } }, x:totable())
    -- its own copy can be written
    local c = e:clone():fill(4)
    assert.same({ { 4, 4, 4 }, { 4, 4, 4 } }, c:totable())
    -- a size-1 dim of stride 0 holds one element: it can be written
    local one = cs.zeros({ 3 }, { device = dev }):expand(1, 3)
    one:fill(2)
    assert.same({ { 2, 2, 2 } }, one:totable())
  end)

  it("refuses sizes that do not fit", function()
    local x = cs.zeros({ 2, 1 }, { device = dev })
    assert.same({ 4, 2, 5 }, x:expand({ 4, -1, 5 }):shape())
    assert.same({ 2, 0 }, x:expand(2, 0):shape())
    H.raises(function() x:expand({ 3, 1 }) end, { "expand: sizes[1]: 3 does not match x's size 2 at dim 1" })
    H.raises(function() x:expand({ 5 }) end, { "expand: sizes: 1 sizes given for a tensor of 2 dims" })
    H.raises(function() x:expand({ -1, 2, 2 }) end, { "expand: sizes[1]: -1 cannot stand for a new dim" })
    H.raises(function() x:expand({ 2, -3 }) end, { "expand: sizes[2]: expected a non-negative integer size or -1" })
    H.raises(function() x:expand({ 2, 1.5 }) end, { "expand: sizes[2]" })
  end)
end)

H.each_device("cs.empty, cs.randn", function(dev, it)
  it("cs.empty makes a tensor of the shape, dtype and device asked for", function()
    for _, dt in ipairs(cs.dtypes) do
      local e = cs.empty({ 3, 4 }, { dtype = dt, device = dev })
      assert.same({ 3, 4 }, e:shape())
      assert.equal(dt, e.dtype)
      assert.equal(dev, e.device)
      assert.is_true(e:is_contiguous())
    end
    assert.equal("float32", cs.empty({ 0 }, { device = dev }).dtype)
    assert.same({}, cs.empty({}, { device = dev }):shape())
    H.raises(function() cs.empty({ -1 }) end, { "empty: shape[1]: expected a non-negative integer size" })
    H.raises(function() cs.empty({ 2 }, { dtype = "int8" }) end, { "empty: dtype: expected a dtype" })
    H.raises(function() cs.empty({ 2 }, { fill = 0 }) end, { "empty: opts: unknown option 'fill'" })
  end)

  it("cs.randn is Box-Muller over Philox, numbering elements in row-major order", function()
    local seed = H.seed_for("randn " .. dev) % 2 ^ 31
    local x = cs.randn({ 4, 16 }, { seed = seed, dtype = "float64", device = dev }):totable()
    local k = 0
    for r = 1, 4 do
      for c = 1, 16 do
        local want = normal_ref(k, seed)
        -- the CPU's libm gives the same bits as Lua's math library; CUDA's log and cos are within
        -- an ulp or two of them
        if dev == "cpu" then assert.equal(want, x[r][c]) else assert.is_true(math.abs(want - x[r][c]) <= 1e-14 * (1 + math.abs(want))) end
        k = k + 1
      end
    end
    local f = cs.randn({ 64 }, { seed = seed, device = dev }):totable()
    for i = 1, 64 do assert.is_true(math.abs(f[i] - H.f32(normal_ref(i - 1, seed))) <= 1e-6 * (1 + math.abs(f[i]))) end
  end)

  it("cs.randn repeats with a seed, follows cs.manual_seed without one, and differs from cs.rand", function()
    local a = cs.randn({ 1000 }, { seed = 5, device = dev })
    assert.equal(H.bits(a), H.bits(cs.randn({ 1000 }, { seed = 5, device = dev })))
    assert.equal(H.bits(a:reshape({ 10, 100 })), H.bits(cs.randn({ 10, 100 }, { seed = 5, device = dev })))
    assert.is_true(cs.max_abs_diff(a, cs.randn({ 1000 }, { seed = 6, device = dev })) > 0.1)
    cs.manual_seed(77)
    local b = cs.randn({ 100 }, { device = dev })
    cs.manual_seed(77)
    assert.equal(H.bits(b), H.bits(cs.randn({ 100 }, { device = dev })))
    -- rand's stream of one seed is not randn's: its uniforms do not map to these normals
    local u = cs.rand({ 1000 }, { seed = 5, device = dev, dtype = "float64" })
    local z = a:to("float64")
    local same = z:gt(0):eq(u:gt(0.5)):sum()
    assert.is_true(same > 400 and same < 600, "sign agreement " .. same)
    H.raises(function() cs.randn({ 2 }, { dtype = "int32" }) end, { "randn: dtype: expected a float dtype (float32, float64, float16 or bfloat16), got int32" })
    H.raises(function() cs.randn({ 2 }, { seed = -1 }) end, { "randn: seed: expected a non-negative integer" })
  end)

  it("cs.randn is standard normal: mean, variance and the share within one sigma", function()
    local n = 200000
    for _, dt in ipairs({ "float32", "float64" }) do
      local x = cs.randn({ n }, { seed = H.seed_for("randn stats") % 2 ^ 31, dtype = dt, device = dev })
      local mean = x:mean()
      local var = (x * x):mean() - mean * mean
      assert.is_true(math.abs(mean) < 5 / math.sqrt(n), dt .. " mean " .. mean)
      assert.is_true(math.abs(var - 1) < 5 * math.sqrt(2 / n), dt .. " variance " .. var)
      local inside = x:abs():le(1):sum() / n
      assert.is_true(math.abs(inside - 0.682689) < 5 * math.sqrt(0.2166 / n), dt .. " within one sigma " .. inside)
      assert.is_true(x:abs():max() < 7)
    end
  end)
end)

H.each_device("cs.where", function(dev, it)
  it("takes a where mask holds and b elsewhere, broadcasting and promoting", function()
    H.with_rng("where " .. dev, function(rng)
      for _ = 1, 30 do
        local shape = random_shape(rng, 3)
        local function part()
          local s = {}
          for d = 1, #shape do s[d] = rng:bool(0.3) and 1 or shape[d] end
          return s
        end
        local ms, as, bs = part(), part(), part()
        -- a dim where every part has size 1 has size 1
        for d = 1, #shape do
          if ms[d] == 1 and as[d] == 1 and bs[d] == 1 then shape[d] = 1 end
        end
        local m = cs.rand(ms, { seed = rng:next(), device = dev }):lt(0.5)
        local a = random_input(rng, as, dev, rng:pick({ "int32", "float32", "float64" }))
        local b = random_input(rng, bs, dev, rng:pick({ "int64", "float32" }))
        local w = cs.where(m, a, b)
        local want = tabulate(shape, function(idx)
          local function pick(t, s)
            local j = {}
            for d = 1, #s do j[d] = s[d] == 1 and 1 or idx[d] end
            return at(t, j)
          end
          return pick(m:totable(), ms) and pick(a:totable(), as) or pick(b:totable(), bs)
        end)
        assert.same(shape, w:shape())
        if H.numel(shape) > 0 then assert.same(want, w:totable()) end
      end
    end)
  end)

  it("never lets a NaN or Inf of the branch not taken through, and takes numbers and booleans", function()
    local x = cs.tensor({ 1, 0, -2, 0 }, { device = dev })
    local safe = cs.where(x:ne(0), x, 1)
    assert.same({ 1, 1, -2, 1 }, safe:totable())
    local r = cs.where(x:eq(0), 0, 1 / x)
    assert.same({ 1, 0, -0.5, 0 }, r:totable())
    assert.equal("float32", r.dtype)
    local i = cs.tensor({ 1, 2, 3 }, { dtype = "int32", device = dev })
    assert.equal("int32", cs.where(i:gt(1), i, 0).dtype)
    assert.equal("float32", cs.where(i:gt(1), i, 0.5).dtype)
    assert.same({ 0.5, 2, 3 }, cs.where(i:gt(1), i, 0.5):totable())
    assert.equal("float64", cs.where(i:gt(1), i, cs.tensor({ nan }, { dtype = "float64", device = dev })).dtype)
    assert.same({ 2, 2, 9 }, cs.where(i:gt(2), 9, 2):totable())
    assert.equal("float32", cs.where(i:gt(2), 9, 2).dtype)
    assert.same({ false, true, true }, cs.where(i:gt(1), true, false):totable())
    assert.same({ { 5, 5 }, { 7, 7 } }, cs.where(cs.tensor({ { true }, { false } }, { device = dev }), 5, cs.full({ 2 }, 7, { device = dev })):totable())
  end)

  it("refuses a mask that is not bool, other devices and shapes that do not broadcast", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    H.raises(function() cs.where(x, x, x) end, { "where: mask: expected a bool tensor, got float32" })
    H.raises(function() cs.where(nil, x, x) end, { "where: mask: expected a tensor, got nil" })
    H.raises(function() cs.where(x:gt(1), "a", x) end, { "where: a: expected a tensor, a number or a boolean" })
    H.raises(function() cs.where(x:gt(1), x:to("int32"), 2 ^ 40) end, { "where: b: 1099511627776 is out of range for int32" })
    H.raises(function() cs.where(x:gt(1), x, cs.zeros({ 2 }, { device = dev })) end, { "where: shapes 3 and 2 cannot be broadcast" })
    if dev == "cuda" then
      H.raises(function() cs.where(x:gt(1), x, cs.zeros({ 3 }, { device = "cpu" })) end, { "where: b: expected a tensor on mask's device (" .. H.printed_device(dev) .. "), got one on cpu" })
    end
  end)
end)

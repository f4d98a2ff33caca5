-- Sharded tensors in one process (cuscan.shard), on CPU stand-ins ("cpu" devices, which run the
-- same logic as GPUs but for the all-gather's transport): shard sizes, queries, creation on the
-- shards, element-wise ops, every scan along every dim against the plain-Lua oracle and the
-- unsharded scan, the carries' fold order, and the errors. The #multigpu block runs the scans
-- on two GPUs when there are two.
local H = require("spec.helpers")
local cs = H.cs

local function cpus(k)
  local l = {}
  for i = 1, k do l[i] = "cpu" end
  return l
end

-- numpy.array_split's sizes written another way: part i holds ceil((n - i + 1) / k) elements
local function split_sizes(n, k)
  local l = {}
  for i = 1, k do l[i] = math.max(math.ceil((n - i + 1) / k), 0) end
  return l
end

describe("cs.shard_sizes and cs.shard", function()
  it("split as numpy.array_split: first shards one larger, shards of size 0 and 1", function()
    for _, c in ipairs({ { 7, 3 }, { 2, 5 }, { 0, 2 }, { 1, 1 }, { 10, 4 }, { 5, 5 }, { 3, 7 } }) do
      assert.same(split_sizes(c[1], c[2]), cs.shard_sizes(c[1], c[2]))
    end
  end)

  it("holds x's slices along dim on each device, gathers back bit for bit, leaves x alone", function()
    H.with_rng("shard slices", function(rng)
      for _ = 1, 6 do
        local shape = { rng:int(1, 6), rng:int(0, 5), rng:int(1, 4) }
        local dim, k = rng:int(1, 3), rng:int(1, 5)
        local x = cs.rand(shape, { seed = rng:next(), dtype = "float64" })
        local before = H.bits(x)
        local s = cs.shard(x, dim, cpus(k))
        assert.is_true(cs.is_sharded(s))
        assert.is_false(cs.is_tensor(s))
        assert.same(shape, s:shape())
        assert.equal(dim, s.shard_dim)
        assert.equal(3, s.ndim)
        assert.equal(3, s:dim())
        assert.equal("float64", s.dtype)
        assert.equal(shape[1] * shape[2] * shape[3], s:numel())
        assert.same(cpus(k), s.devices)
        local sizes = split_sizes(shape[dim], k)
        assert.same(sizes, s:shard_sizes())
        local parts, at = s:shards(), 1
        assert.equal(k, #parts)
        for i, p in ipairs(parts) do
          assert.is_true(cs.is_tensor(p))
          assert.equal(sizes[i], p:size(dim))
          assert.equal(H.bits(x:narrow(dim, at, sizes[i])), H.bits(p))
          at = at + sizes[i]
        end
        assert.equal(H.bits(x), H.bits(s:gather()))
        assert.equal(H.bits(x), H.bits(s:gather("cpu")))
        assert.same(x:totable(), s:totable())
        assert.equal(before, H.bits(x))
        assert.is_true(cs.allclose(s, x))
        assert.tensor_equal(x, s)
      end
    end)
  end)

  it("gives its shards' memory back in the first collection after it is dropped", function()
    local x = cs.rand({ 500, 300 }, { devices = cpus(2), shard_dim = 1, seed = 3 })
    collectgarbage("collect")
    local base = cs.memory_info("cpu").in_use
    local y = x:cumsum(2)
    assert.equal(base + 500 * 300 * 4, cs.memory_info("cpu").in_use)
    y = nil
    collectgarbage("collect")
    assert.equal(base, cs.memory_info("cpu").in_use)
  end)

  it("prints the values, that it is sharded and over which devices", function()
    local s = cs.shard(cs.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }), 1, { "cpu", "cpu" })
    local text = tostring(s)
    assert.matches("sharded along dim 1 over cpu, cpu", text, 1, true)
    assert.matches("shard sizes 2, 1", text, 1, true)
    assert.matches("float32 tensor 3x2", text, 1, true)
    assert.matches("5", text, 1, true)
  end)
end)

describe("creation on the shards", function()
  it("zeros, ones, full, empty: the shape split along shard_dim, each shard on its device", function()
    local z = cs.zeros({ 4, 5 }, { devices = cpus(3), shard_dim = 2, dtype = "int32" })
    assert.same({ 4, 5 }, z:shape())
    assert.same({ 2, 2, 1 }, z:shard_sizes())
    assert.equal("int32", z.dtype)
    assert.tensor_equal(cs.zeros({ 4, 5 }, { dtype = "int32" }), z)
    assert.tensor_equal(cs.ones({ 3, 2 }), cs.ones({ 3, 2 }, { devices = cpus(2) }))
    assert.tensor_equal(cs.full({ 3, 2 }, 7.5), cs.full({ 3, 2 }, 7.5, { devices = cpus(4) }))
    assert.same({ 3, 2 }, cs.empty({ 3, 2 }, { devices = cpus(2), shard_dim = -1 }):shape())
  end)

  it("arange: the elements of the whole range, computed from start", function()
    for _, c in ipairs({ { 0, 10, 1, "int64" }, { 3, -20, -3, "int32" }, { 0, 1, 0.1, "float64" }, { 0, 5, 1, "float32" } }) do
      local want = cs.arange(c[1], c[2], c[3], { dtype = c[4] })
      for k = 1, 4 do
        local got = cs.arange(c[1], c[2], c[3], { dtype = c[4], devices = cpus(k) })
        assert.same(split_sizes(want:numel(), k), got:shard_sizes())
        assert.equal(H.bits(want), H.bits(got:gather()))
      end
    end
  end)

  it("rand and randn: a seed repeats, shards draw different streams", function()
    local a = cs.rand({ 6, 3 }, { devices = cpus(2), seed = 11 })
    local b = cs.rand({ 6, 3 }, { devices = cpus(2), seed = 11 })
    assert.equal(H.bits(a:gather()), H.bits(b:gather()))
    local p = a:shards()
    assert.is_false(cs.allclose(p[1], p[2]))
    local g = a:gather()
    assert.is_true(g:ge(0):logical_and(g:lt(1)):sum() == 18)
    local n = cs.randn({ 4 }, { devices = cpus(2), seed = 3, dtype = "float64" })
    assert.equal("float64", n.dtype)
  end)
end)

describe("element-wise ops on sharded tensors", function()
  it("run shard by shard with an operand sharded the same way or a number", function()
    H.with_rng("sharded element-wise", function(rng)
      -- on the CPU, as the shards: exp and sqrt give the same bits only on the same device
      local x = cs.tensor(H.random_table(rng, { 5, 3 }, "float64"), { dtype = "float64", device = "cpu" })
      local y = cs.tensor(H.random_table(rng, { 5, 3 }, "float64"), { dtype = "float64", device = "cpu" })
      local sx, sy = cs.shard(x, 1, cpus(3)), cs.shard(y, 1, cpus(3))
      local cases = {
        { sx + sy, x + y }, { sx - sy, x - y }, { sx * sy, x * y }, { sx / sy, x / y }, { sx + 2, x + 2 },
        { 2 - sx, 2 - x }, { 3 * sx, 3 * x }, { 1 / sx, 1 / x }, { -sx, -x }, { sx:maximum(sy), x:maximum(y) },
        { sx:gt(sy), x:gt(y) }, { sx:le(0), x:le(0) }, { sx:abs():sqrt(), x:abs():sqrt() }, { sx:exp(), x:exp() },
        { sx:to("float32"), x:to("float32") }, { sx:gt(0):logical_and(sy:gt(0)), x:gt(0):logical_and(y:gt(0)) },
      }
      for i, c in ipairs(cases) do
        assert.is_true(cs.is_sharded(c[1]), "case " .. i)
        assert.equal(c[2].dtype, c[1].dtype, "case " .. i)
        assert.equal(H.bits(c[2]), H.bits(c[1]:gather()), "case " .. i)
      end
    end)
  end)

  it("refuse operands sharded another way and plain tensors", function()
    local x = cs.rand({ 6, 4 })
    local a = cs.shard(x, 1, cpus(2))
    local b = cs.shard(x, 2, cpus(2))
    local c = cs.shard(x, 1, cpus(3))
    H.raises(function() a:add(b) end, { "add: b:", "sharded along dim 2" })
    H.raises(function() a:mul(c) end, { "mul: b:", "do not match" })
    H.raises(function() local _ = a + c end, { "add: b:" })
    H.raises(function() a:sub(x) end, { "sub: b:", "shard it" })
    H.raises(function() a:gt("1") end, { "gt: b:" })
  end)
end)

-- The scan cases: op name of the oracle, function, input dtypes
local OPS = {
  { "sum", "cumsum", { "float32", "float64", "int32", "int64", "bool" } },
  { "prod", "cumprod", { "float64", "float32", "int64" } },
  { "lse", "logcumsumexp", { "float64", "float32" } },
}

-- got (gathered) against the unsharded scan want: the same bits for integers (the same fold
-- order), within twice the float tolerance otherwise (two roundings a tie apart each)
local function same_as_plain(want, got, op, len)
  if H.is_int_dtype[want.dtype] then
    assert.equal(H.bits(want), H.bits(got))
  else
    local rtol, atol = H.tol(want.dtype, op, len)
    assert.tensor_near(want, got, 2 * rtol, 2 * atol)
  end
end

local function check_scan(rng, x, values, op, fname, dim, k, sdim, o, plain_opts)
  local s = cs.shard(x, sdim, cpus(k))
  local so = { reverse = o.reverse, exclusive = o.exclusive, dtype = o.dtype }
  local mask
  if o.mask then
    mask = o.mask
    so.mask = rng:bool(0.5) and cs.shard(mask, sdim, cpus(k)) or mask
  end
  local want_plain = cs[fname](x, dim, plain_opts)
  if o.out then
    so.out = cs.full(x:shape(), H.poison(want_plain.dtype), { dtype = want_plain.dtype, devices = cpus(k), shard_dim = sdim })
  end
  local got = cs[fname](s, dim, so)
  if o.out then assert.equal(so.out, got) end
  assert.is_true(cs.is_sharded(got))
  assert.equal(want_plain.dtype, got.dtype)
  local g = got:gather()
  local len = x:size(dim)
  if x:numel() == 0 then
    assert.same(x:shape(), g:shape())
    return
  end
  local ref = H.scan_ref(values, dim, { op = op, reverse = o.reverse, exclusive = o.exclusive,
                                       mask = mask and mask:totable(), dtype = want_plain.dtype })
  H.assert_result(ref, g, want_plain.dtype, op, len)
  same_as_plain(want_plain, g, op, len)
end

describe("scans of sharded tensors", function()
  it("every op along every dim, sharded along any dim, with reverse, exclusive, mask, out and dtype", function()
    H.with_rng("sharded scans", function(rng)
      for _, spec in ipairs(OPS) do
        local op, fname = spec[1], spec[2]
        for _, dtype in ipairs(spec[3]) do
          for sdim = 1, 3 do
            for dim = 1, 3 do
              local shape = { rng:int(1, 7), rng:int(1, 6), rng:int(1, 5) }
              shape[sdim] = rng:int(0, 9)
              local values = H.random_table(rng, shape, dtype, op)
              -- (a nested table with an empty dim cannot say the sizes after it)
              local x = cs.tensor(values, { dtype = dtype }):reshape(shape)
              values = x:totable()
              local o = { reverse = rng:bool(0.5), exclusive = rng:bool(0.4), out = rng:bool(0.4) }
              if rng:bool(0.5) then o.mask = cs.tensor(H.random_mask(rng, shape, 0.6), { dtype = "bool" }):reshape(shape) end
              local plain = { reverse = o.reverse, exclusive = o.exclusive, mask = o.mask }
              if dtype == "float32" and rng:bool(0.5) then o.dtype, plain.dtype = "float64", "float64" end
              local k = rng:int(1, 5)
              H.replay(rng:next(), ("%s %s x %s sharded along %d over %d, scanned along %d"):format(fname, dtype,
                       table.concat(shape, "x"), sdim, k, dim), function()
                check_scan(rng, x, values, op, fname, dim, k, sdim, o, plain)
              end)
            end
          end
        end
      end
    end)
  end)

  it("cummax and cummin along a dim that is not sharded, values and indices", function()
    H.with_rng("sharded cummax", function(rng)
      local x = cs.tensor(H.random_table(rng, { 6, 5 }, "int64"), { dtype = "int64" })
      local s = cs.shard(x, 2, cpus(3))
      for _, f in ipairs({ "cummax", "cummin" }) do
        local v, i = cs[f](s, 1, { reverse = true })
        local pv, pi = cs[f](x, 1, { reverse = true })
        assert.equal(H.bits(pv), H.bits(v:gather()))
        assert.equal(H.bits(pi), H.bits(i:gather()))
      end
    end)
  end)

  it("a segmented scan along a dim that is not sharded", function()
    H.with_rng("sharded reset", function(rng)
      local x = cs.tensor(H.random_table(rng, { 5, 6 }, "int64"), { dtype = "int64" })
      local reset = cs.tensor(H.random_mask(rng, { 5, 6 }, 0.3))
      local s = cs.shard(x, 1, cpus(2))
      local got = s:cumsum(2, { reset = cs.shard(reset, 1, cpus(2)) })
      assert.equal(H.bits(x:cumsum(2, { reset = reset })), H.bits(got:gather()))
    end)
  end)

  it("reverse_cumsum and masked_cumsum methods", function()
    local x = cs.arange(1, 11, { dtype = "int64" })
    local s = cs.shard(x, 1, cpus(3))
    local m = x:gt(4)
    assert.equal(H.bits(x:reverse_cumsum(1)), H.bits(s:reverse_cumsum(1):gather()))
    assert.equal(H.bits(x:masked_cumsum(m, 1)), H.bits(s:masked_cumsum(m, 1):gather()))
  end)

  it("fold the carries of the shards before each one, left to right in the scan's direction", function()
    -- 2^53 + 1 rounds to 2^53 (a tie to even) while 2^53 + (1 + 1) is exact: a carry folded in
    -- shard order gives 2^53, any other order 2^53 + 2
    local big = 2 ^ 53
    local x = cs.tensor({ big, 1, 1, 0 }, { dtype = "float64" })
    local s = cs.shard(x, 1, cpus(4))
    assert.same({ big, big, big, big }, s:cumsum(1):totable())
    assert.same(x:cumsum(1):totable(), s:cumsum(1):totable())
    local r = cs.tensor({ 0, 1, 1, big }, { dtype = "float64" })
    local sr = cs.shard(r, 1, cpus(4))
    assert.same({ big, big, big, big }, sr:cumsum(1, { reverse = true }):totable())
    assert.same({ big, big, big, 0 }, sr:cumsum(1, { reverse = true, exclusive = true }):totable())
  end)

  it("refuse what they cannot do with cuscan: errors", function()
    local x = cs.rand({ 6, 4 })
    local s = cs.shard(x, 1, cpus(2))
    H.raises(function() s:cummax(1) end, { "cummax: dim:", "not supported on sharded tensors yet" })
    H.raises(function() cs.cummin(s, -2) end, { "cummin: dim:", "not supported on sharded tensors yet" })
    H.raises(function() s:cumsum(1, { reset = x:gt(0.5) }) end, { "cumsum: opts:", "not supported on sharded tensors yet" })
    H.raises(function() s:cumsum(3) end, { "cumsum: dim: 3 is out of range" })
    H.raises(function() s:cumsum(0) end, { "cumsum: dim: 0", "1-based" })
    H.raises(function() s:cumsum(1, { bogus = true }) end, { "cumsum: opts: unknown option 'bogus'" })
    H.raises(function() s:cumsum(2, { initial = cs.zeros({ 6 }) }) end, { "cumsum: initial: not supported on sharded tensors yet" })
    H.raises(function() s:cumsum(1, { out = cs.zeros({ 6, 4 }) }) end, { "cumsum: out: expected a tensor sharded as x" })
    H.raises(function() s:cumsum(1, { mask = cs.ones({ 6 }):gt(0) }) end, { "cumsum: mask: expected x's shape 6x4" })
    H.raises(function() s:cumsum(1, { mask = cs.shard(x:gt(0), 2, cpus(2)) }) end, { "cumsum: b: sharded along dim 2" })
    H.raises(function() s:cumsum(1, { dtype = "int32" }) end, { "cumsum: dtype:" })
    H.raises(function() s:cumprod(1, { out = cs.shard(cs.zeros({ 6, 4 }, { dtype = "int32" }), 1, cpus(2)) }) end,
             { "cumprod: out: expected dtype float32" })
    local before = H.bits(x)
    pcall(function() return s:cumsum(1, { out = s, dtype = "float64" }) end)
    assert.equal(before, H.bits(s:gather()))
  end)
end)

describe("arguments of cs.shard and the constructors", function()
  it("are checked with cuscan: errors", function()
    local x = cs.rand({ 4, 3 })
    H.raises(function() cs.shard(x, 1, { "cuda:-1" }) end, { "shard: devices[1]:", "\"cuda:-1\"" })
    H.raises(function() cs.shard(x, 1, { "cpu", "gpu" }) end, { "shard: devices[2]:", "\"gpu\"" })
    H.raises(function() cs.shard(x, 1, { "cuda:99" }) end, { "shard: devices[1]:" })
    H.raises(function() cs.shard(x, 1, {}) end, { "shard: devices: expected a non-empty list" })
    H.raises(function() cs.shard(x, 1, "cpu") end, { "shard: devices:" })
    H.raises(function() cs.shard(x, 3, { "cpu" }) end, { "shard: dim: 3 is out of range" })
    H.raises(function() cs.shard(cs.tensor(1), 1, { "cpu" }) end, { "shard: x: a 0-d tensor" })
    H.raises(function() cs.shard({ 1, 2 }, 1, { "cpu" }) end, { "shard: x: expected a tensor" })
    H.raises(function() cs.zeros({ 4 }, { devices = { "cpu" }, shard_dim = 2 }) end, { "zeros: shard_dim: 2 is out of range" })
    H.raises(function() cs.zeros({ 4 }, { devices = { "cpu" }, device = "cpu" }) end, { "zeros: opts: give device or devices" })
    H.raises(function() cs.rand({}, { devices = { "cpu" } }) end, { "rand: shape: a sharded tensor needs at least one dim" })
    H.raises(function() cs.full({ 2 }, 1, { devices = { "tpu" } }) end, { "full: devices[1]:" })
    H.raises(function() cs.shard_sizes(-1, 2) end, { "shard_sizes: n:" })
    H.raises(function() cs.shard_sizes(3, 0) end, { "shard_sizes: parts:" })
    local s = cs.shard(x, 1, { "cpu" })
    H.raises(function() s:gather("gpu") end, { "gather: device:" })
    H.raises(function() s.shard_dim = 2 end, { "cannot set field" })
    H.raises(function() s:size(3) end, { "size: dim: 3 is out of range" })
  end)
end)

-- Two GPUs: the same scans with shards on cuda:0 and cuda:1, against the one-GPU result.
describe("sharded scans on two GPUs #multigpu", function()
  local two = cs.device_count ~= nil and cs.device_count() >= 2
  local it = two and it or function(name) pending(name .. " (skipped: fewer than 2 CUDA devices)") end

  it("match the one-GPU scan along every dim, odd shard sizes, sizes 0 and 1, masked", function()
    H.with_rng("multigpu scans", function(rng)
      local devs = { "cuda:0", "cuda:1" }
      for _, spec in ipairs(OPS) do
        for _, dtype in ipairs(spec[3]) do
          for _, shape in ipairs({ { 7, 5, 3 }, { 1, 9, 4 }, { 3, 1, 33 }, { 1025, 3, 2 } }) do
            local x = cs.tensor(H.random_table(rng, shape, dtype, spec[1]), { dtype = dtype, device = "cuda:0" })
            for sdim = 1, 3 do
              local s = cs.shard(x, sdim, devs)
              for dim = 1, 3 do
                local o = { reverse = rng:bool(0.5), exclusive = rng:bool(0.3) }
                if rng:bool(0.5) then o.mask = x:gt(0) end
                local want = cs[spec[2]](x, dim, o)
                same_as_plain(want, cs[spec[2]](s, dim, o):gather("cuda:0"), spec[1], shape[dim])
              end
            end
          end
        end
      end
    end)
  end)
end)

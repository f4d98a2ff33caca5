-- The experiment toolkit on both devices: operators and comparisons with numpy broadcasting and
-- torch's type promotion, logical ops, unary math, reductions, cat, fill, copy, allclose and
-- max_abs_diff. Expected values are computed in plain Lua from the inputs' totable().
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local nan, inf = 0 / 0, math.huge

-- Plain-Lua element-wise op over nested tables with numpy broadcasting.
local function lua_broadcast(a, b, f)
  local sa, sb = H.shape_of(a), H.shape_of(b)
  local n = math.max(#sa, #sb)
  local shape = {}
  for i = 0, n - 1 do
    local x, y = sa[#sa - i] or 1, sb[#sb - i] or 1
    shape[n - i] = x == 1 and y or x
  end
  local fa, fb = H.flatten(a, sa), H.flatten(b, sb)
  local out = {}
  local total = H.numel(shape)
  for k = 0, total - 1 do
    local idx, rem = {}, k
    for d = n, 1, -1 do
      idx[d] = rem % shape[d]
      rem = math.floor(rem / shape[d])
    end
    local function pick(s, flat)
      local off, stride = 0, 1
      for d = #s, 1, -1 do
        local i = idx[n - #s + d]
        if s[d] == 1 then i = 0 end
        off = off + i * stride
        stride = stride * s[d]
      end
      return flat[off + 1]
    end
    out[k + 1] = f(pick(sa, fa), pick(sb, fb))
  end
  return H.unflatten(out, shape)
end

H.each_device("arithmetic operators", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt }) end

  it("work with numbers on either side", function()
    local seed = H.seed_for("arith numbers" .. dev)
    H.replay(seed, "numbers", function()
      local rng = H.rng(seed)
      local x = T(H.random_table(rng, { 3, 4 }, "float64", "sum"), "float64")
      local xv = x:totable()
      local function map(f) return H.unflatten((function()
        local out = {}
        for i, v in ipairs(H.flatten(xv)) do out[i] = f(v) end
        return out
      end)(), { 3, 4 }) end
      assert.tensor_near(map(function(v) return v + 1.5 end), x + 1.5, 1e-15, 0)
      assert.tensor_near(map(function(v) return 1.5 + v end), 1.5 + x, 1e-15, 0)
      assert.tensor_near(map(function(v) return v - 2 end), x - 2, 1e-15, 0)
      assert.tensor_near(map(function(v) return 2 - v end), 2 - x, 1e-15, 0)
      assert.tensor_near(map(function(v) return v * 3 end), x * 3, 1e-15, 0)
      assert.tensor_near(map(function(v) return 3 * v end), 3 * x, 1e-15, 0)
      assert.tensor_near(map(function(v) return v / 4 end), x / 4, 1e-15, 0)
      assert.tensor_near(map(function(v) return 4 / v end), 4 / x, 1e-15, 0)
      assert.tensor_near(map(function(v) return -v end), -x, 0, 0)
      assert.same(xv, x:totable())
    end)
  end)

  it("work between tensors of one shape and broadcast numpy's way", function()
    local seed = H.seed_for("arith broadcast" .. dev)
    H.replay(seed, "broadcast", function()
      local rng = H.rng(seed)
      local pairs_ = {
        { { 2, 3 }, { 2, 3 } }, { { 2, 3 }, { 3 } }, { { 2, 1 }, { 1, 3 } }, { { 4, 1, 3 }, { 2, 1 } },
        { { 3 }, { 2, 1, 1 } }, { {}, { 2, 2 } }, { { 5, 1 }, {} }, { { 1 }, { 4 } }, { { 0, 3 }, { 3 } },
      }
      local ops = {
        { "+", function(a, b) return a + b end, function(a, b) return a + b end },
        { "-", function(a, b) return a - b end, function(a, b) return a - b end },
        { "*", function(a, b) return a * b end, function(a, b) return a * b end },
        { "/", function(a, b) return a / b end, function(a, b) return a / b end },
      }
      for _, p in ipairs(pairs_) do
        local function make(shape)
          if #shape == 0 then return rng:uniform(0.5, 2) end
          if H.numel(shape) == 0 then return nil end
          return H.random_table(rng, shape, "float64", "prod")
        end
        local av, bv = make(p[1]), make(p[2])
        local a = av ~= nil and T(av, "float64") or cs.zeros(p[1], { device = dev, dtype = "float64" })
        local b = bv ~= nil and T(bv, "float64") or cs.zeros(p[2], { device = dev, dtype = "float64" })
        for _, op in ipairs(ops) do
          local r = op[3](a, b)
          local shape = {}
          local n = math.max(#p[1], #p[2])
          for i = 0, n - 1 do
            local x, y = p[1][#p[1] - i] or 1, p[2][#p[2] - i] or 1
            shape[n - i] = x == 1 and y or x
          end
          assert.same(shape, r:shape())
          if av ~= nil and bv ~= nil then
            assert.tensor_near(lua_broadcast(av, bv, op[2]), r, 1e-15, 0)
          end
        end
      end
    end)
  end)

  it("promote dtypes as torch does", function()
    local i32 = T({ 7, -3 }, "int32")
    local i64 = T({ 7, -3 }, "int64")
    local f32 = T({ 1.5, 2 }, "float32")
    local f64 = T({ 1.5, 2 }, "float64")
    local b = T({ true, false })
    assert.equal("int32", (i32 + i32).dtype)
    assert.equal("int64", (i32 + i64).dtype)
    assert.equal("float32", (i32 + f32).dtype)
    assert.equal("float64", (f32 + f64).dtype)
    assert.equal("float64", (i64 * f64).dtype)
    assert.equal("bool", (b + b).dtype)
    assert.equal("int32", (b + i32).dtype)
    assert.equal("int32", (i32 + 1).dtype)
    assert.equal("int32", (2 * i32).dtype)
    assert.equal("float32", (i32 + 0.5).dtype)
    assert.equal("int64", (b + 1).dtype)
    assert.equal("float32", (b * 0.5).dtype)
    assert.equal("float64", (f64 - 1).dtype)
    assert.equal("float32", (f32 * 1e300).dtype)
    -- true division
    assert.equal("float32", (i32 / i32).dtype)
    assert.tensor_equal({ 3.5, -1.5 }, i32 / 2)
    assert.equal("float64", (f64 / i32).dtype)
    -- values of promoted results
    assert.tensor_equal({ 7.5, -2.5 }, i32 + 0.5)
    assert.tensor_equal({ 8, -3 }, b + i64)
    assert.equal("int64", (b + i64).dtype)
    assert.tensor_equal({ true, false }, b * b)
    assert.tensor_equal({ 2, 1 }, b + 1)
  end)

  it("wrap integers around on overflow", function()
    local x = T({ 2147483647, -2147483648 }, "int32")
    assert.tensor_equal({ -2147483648, 2147483647 }, x + T({ 1, -1 }, "int32"))
    assert.tensor_equal({ -2, 0 }, x * 2)
    local y = T({ 0x7fffffffffffffffLL }, "int64")
    local z = y + 1
    assert.equal(1, z:eq(cs.tensor({ -0x8000000000000000LL }, { dtype = "int64", device = dev })):sum())
  end)

  it("raise the errors of unsupported mixes", function()
    local b = T({ true, false })
    assert.has_error(function() local _ = b - b end)
    assert.has_error(function() local _ = -b end)
    assert.has_error(function() local _ = T({ 1, 2 }, "int32"):pow(-1) end)
  end)
end)

H.each_device("comparisons and logical ops", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt }) end

  it("compare with numbers and tensors, broadcasting, giving bool tensors", function()
    local seed = H.seed_for("cmp" .. dev)
    H.replay(seed, "cmp", function()
      local rng = H.rng(seed)
      local av = H.build({ 3, 4 }, function() return rng:int(-3, 3) end)
      local bv = H.build({ 4 }, function() return rng:int(-3, 3) end)
      for _, dt in ipairs({ "float32", "int32", "int64", "float64" }) do
        local a, b = T(av, dt), T(bv, dt == "float32" and "int64" or dt)
        local cmps = {
          lt = function(x, y) return x < y end, le = function(x, y) return x <= y end,
          gt = function(x, y) return x > y end, ge = function(x, y) return x >= y end,
          eq = function(x, y) return x == y end, ne = function(x, y) return x ~= y end,
        }
        for name, f in pairs(cmps) do
          local r = a[name](a, b)
          assert.equal("bool", r.dtype)
          assert.tensor_equal(lua_broadcast(av, bv, f), r)
          assert.tensor_equal(lua_broadcast(av, 0.5, f), a[name](a, 0.5))
          assert.tensor_equal(lua_broadcast(av, 1, f), a[name](a, 1))
        end
      end
    end)
  end)

  it("compare a float tensor with a number taken in the tensor's dtype, as PyTorch and NumPy do", function()
    for _, dt in ipairs({ "float32", "float16", "bfloat16", "float64" }) do
      local x = T({ 0.1, 1 / 3, -2.7, 1e-30 }, dt)
      for i, v in ipairs({ 0.1, 1 / 3, -2.7, 1e-30 }) do
        local mine = { false, false, false, false }
        mine[i] = true
        assert.tensor_equal(mine, x:eq(v))
        assert.equal(false, x:ne(v):totable()[i])
        assert.equal(false, x:gt(v):totable()[i])
        assert.equal(true, x:le(v):totable()[i])
      end
    end
    -- a number between two float32 values is rounded first, to the nearer one
    local x = T({ 1 }, "float32")
    assert.tensor_equal({ true }, x:eq(1 + 2 ^ -30))
    assert.tensor_equal({ false }, x:eq(1 + 2 ^ -20))
    assert.tensor_equal({ true }, T({ 65504 }, "float16"):lt(1e6))
  end)

  it("compare an integer tensor with a fractional number exactly", function()
    local x = T({ 1, 2, 3 }, "int64")
    assert.tensor_equal({ false, true, true }, x:gt(1.5))
    assert.tensor_equal({ false, false, false }, x:eq(2.5))
    assert.tensor_equal({ true, true, true }, x:lt(1e300))
  end)

  it("combine masks with logical_not, logical_and and logical_or", function()
    local a = T({ true, true, false, false })
    local b = T({ true, false, true, false })
    assert.tensor_equal({ false, false, true, true }, a:logical_not())
    assert.tensor_equal({ true, false, false, false }, a:logical_and(b))
    assert.tensor_equal({ true, true, true, false }, a:logical_or(b))
    assert.tensor_equal({ true, false, true, false }, T({ 2, 0, -1, 0 }):logical_and(T({ 1, 1, 1, 1 }, "int32")))
    assert.tensor_equal({ { true, false }, { false, false } }, T({ { true, false }, { true, true } }):logical_and(T({ true, false })) :logical_and(T({ { true }, { false } })))
    assert.tensor_equal({ false, true }, T({ 0, 3 }):logical_not():logical_not())
  end)
end)

H.each_device("unary math", function(dev, it)
  it("exp, log, abs, sqrt and pow match Lua's math", function()
    local xv = { 0.25, 1, 2.5, 9 }
    local x = cs.tensor(xv, { device = dev, dtype = "float64" })
    local function map(f) local o = {} for i, v in ipairs(xv) do o[i] = f(v) end return o end
    assert.tensor_near(map(math.exp), x:exp(), 1e-15, 0)
    assert.tensor_near(map(math.log), x:log(), 1e-15, 1e-300)
    assert.tensor_near(map(math.sqrt), x:sqrt(), 1e-15, 0)
    assert.tensor_near(map(function(v) return v ^ 1.5 end), x:pow(1.5), 1e-15, 0)
    assert.tensor_near(map(function(v) return v ^ v end), x:pow(x), 1e-14, 0)
    assert.tensor_equal({ 1, 2, 3 }, cs.tensor({ -1, 2, -3 }, { device = dev }):abs())
    assert.tensor_equal({ 1, 2, 3 }, cs.tensor({ -1, 2, -3 }, { device = dev, dtype = "int32" }):abs())
  end)

  it("give floats for integer inputs of exp, log and sqrt, integers for abs and integer pow", function()
    local i = cs.tensor({ 1, 4, 9 }, { device = dev, dtype = "int32" })
    assert.equal("float32", i:sqrt().dtype)
    assert.tensor_equal({ 1, 2, 3 }, i:sqrt())
    assert.equal("float32", i:exp().dtype)
    assert.equal("int32", i:abs().dtype)
    assert.equal("int32", i:pow(2).dtype)
    assert.tensor_equal({ 1, 16, 81 }, i:pow(2))
    assert.equal("float32", i:pow(0.5).dtype)
    assert.tensor_equal({ 1, 2, 3 }, i:pow(0.5))
  end)

  it("follow IEEE for special values", function()
    local x = cs.tensor({ -1, 0, inf, nan }, { device = dev, dtype = "float64" })
    local l = x:log():totable()
    assert.is_true(l[1] ~= l[1])
    assert.equal(-inf, l[2])
    assert.equal(inf, l[3])
    assert.is_true(l[4] ~= l[4])
    assert.equal(0, x:exp():totable()[1] - math.exp(-1))
  end)
end)

H.each_device("reductions", function(dev, it)
  local function ref_reduce(values, dim, f, init)
    -- reduce a 2-D table along dim (1 or 2)
    local out = {}
    if dim == 1 then
      for j = 1, #values[1] do
        local acc = init(values[1][j])
        for i = 2, #values do acc = f(acc, values[i][j]) end
        out[j] = acc
      end
    else
      for i = 1, #values do
        local acc = init(values[i][1])
        for j = 2, #values[i] do acc = f(acc, values[i][j]) end
        out[i] = acc
      end
    end
    return out
  end
  local function id(v) return v end

  it("over all elements return Lua numbers", function()
    local seed = H.seed_for("reduce all" .. dev)
    H.replay(seed, "reduce all", function()
      local rng = H.rng(seed)
      local xv = H.random_table(rng, { 7, 5 }, "float64", "sum")
      local x = cs.tensor(xv, { device = dev, dtype = "float64" })
      local flat = H.flatten(xv)
      local s, mx, mn = 0, -inf, inf
      for _, v in ipairs(flat) do s = s + v; mx = math.max(mx, v); mn = math.min(mn, v) end
      assert.is_number(x:sum())
      assert.near(s, x:sum(), 1e-12)
      assert.near(s / #flat, x:mean(), 1e-12)
      assert.equal(mx, x:max())
      assert.equal(mn, x:min())
      local i = cs.tensor({ 3, -7, 12 }, { device = dev, dtype = "int32" })
      assert.equal(8, i:sum())
      assert.equal(12, i:max())
      assert.equal(-7, i:min())
      assert.equal(8 / 3, i:mean())
      assert.equal(2, cs.tensor({ true, false, true }, { device = dev }):sum())
    end)
  end)

  it("along a dim give tensors without that dim", function()
    local seed = H.seed_for("reduce dim" .. dev)
    H.replay(seed, "reduce dim", function()
      local rng = H.rng(seed)
      local xv = H.random_table(rng, { 6, 4 }, "float32", "sum")
      local x = cs.tensor(xv, { device = dev })
      xv = x:totable()
      for _, d in ipairs({ 1, 2, -1, -2 }) do
        local dd = d < 0 and 3 + d or d
        assert.tensor_near(ref_reduce(xv, dd, function(a, b) return a + b end, id), x:sum(d), 1e-6, 1e-6)
        assert.tensor_near(ref_reduce(xv, dd, math.max, id), x:max(d), 0, 0)
        assert.tensor_near(ref_reduce(xv, dd, math.min, id), x:min(d), 0, 0)
        local sums = ref_reduce(xv, dd, function(a, b) return a + b end, id)
        local n = dd == 1 and 6 or 4
        for k, v in ipairs(sums) do sums[k] = v / n end
        assert.tensor_near(sums, x:mean(d), 1e-6, 1e-6)
        assert.same({ dd == 1 and 4 or 6 }, x:sum(d):shape())
      end
      -- views reduce too
      local t = x:transpose(1, 2)
      assert.tensor_near(ref_reduce(xv, 2, function(a, b) return a + b end, id), t:sum(1), 1e-6, 1e-6)
    end)
  end)

  it("choose result dtypes as torch does", function()
    local i = cs.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev, dtype = "int32" })
    assert.equal("int64", i:sum(1).dtype)
    assert.equal("float32", i:mean(1).dtype)
    assert.equal("int32", i:max(1).dtype)
    assert.equal("int64", cs.tensor({ { true } }, { device = dev }):sum(2).dtype)
    assert.equal("float64", cs.zeros({ 2, 2 }, { device = dev, dtype = "float64" }):sum(2).dtype)
  end)

  it("propagate NaN through max and min", function()
    local x = cs.tensor({ 1, nan, 3 }, { device = dev })
    assert.is_true(x:max() ~= x:max())
    assert.is_true(x:min() ~= x:min())
    assert.is_true(x:sum() ~= x:sum())
  end)
end)

H.each_device("cat, fill and copy", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt }) end

  it("fill writes each dtype's bits of the value, in dense runs of any start and length and in views, "
     .. "and nothing outside the view (a copy of the value the reference)", function()
    local VALUES = {
      float32 = { 0.1, -0.0, 0 / 0, 1 / 0, 3e38, 1e-45 }, float64 = { 0.1, -0.0, 0 / 0, -1 / 0, 5e-324 },
      float16 = { 0.1, -0.0, 65504, 1e-7 }, bfloat16 = { 0.1, -0.0, 3e38 }, int32 = { 7, -2147483648 },
      int64 = { -3, 2 ^ 53, require("ffi").new("int64_t", 4611686018427387905LL) }, bool = { true, false },
    }
    local VIEWS = {
      function(b) return b end,
      function(b) return b:narrow(1, 2, b:size(1) - 3) end,   -- a start off the 16-byte grid, a ragged end
      function(b) return b:narrow(1, 1, 1) end,
      function(b) return b:narrow(2, 3, 5) end,
      function(b) return b:transpose(1, 2) end,
    }
    for dtype, vals in pairs(VALUES) do
      for _, len in ipairs({ 4, 17, 33, 4099 }) do
        for vi, view in ipairs(VIEWS) do
          for _, v in ipairs(vals) do
            local poison = dtype == "bool" and true or 5
            local got = cs.full({ len, 7 }, poison, { dtype = dtype, device = dev })
            local want = cs.tensor(H.build({ len, 7 }, function() return poison end), { dtype = dtype, device = "cpu" })
            view(got):fill(v)
            view(want):copy(cs.tensor({ v }, { dtype = dtype, device = "cpu" }))
            assert.is_true(H.bits(want) == H.bits(got), ("%s %d view %d fill %s"):format(dtype, len, vi, tostring(v)))
          end
        end
      end
    end
  end)

  it("cat joins along any dim, promoting dtypes", function()
    local a = T({ { 1, 2 }, { 3, 4 } })
    local b = T({ { 5, 6 } }, "float64")
    local r = cs.cat({ a, b }, 1)
    assert.equal("float64", r.dtype)
    assert.tensor_equal({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, r)
    assert.tensor_equal({ { 1, 2, 1, 3 }, { 3, 4, 2, 4 } }, cs.cat({ a, a:transpose(1, 2) }, 2))
    assert.tensor_equal({ { 1, 2, 1, 3 }, { 3, 4, 2, 4 } }, cs.cat({ a, a:transpose(1, 2) }, -1))
    assert.tensor_equal({ 1, 2, 3 }, cs.cat({ T({ 1 }), cs.zeros({ 0 }, { device = dev }), T({ 2, 3 }) }, 1))
    assert.equal("int32", cs.cat({ T({ 1 }, "int32"), T({ true }) }, 1).dtype)
  end)

  it("fill sets every element in place and writes through views", function()
    local x = cs.zeros({ 3, 4 }, { device = dev })
    assert.is_true(rawequal(x, x:fill(2.5)))
    assert.tensor_equal(H.build({ 3, 4 }, function() return 2.5 end), x)
    x:narrow(2, 2, 2):fill(-1)
    assert.tensor_equal({ { 2.5, -1, -1, 2.5 }, { 2.5, -1, -1, 2.5 }, { 2.5, -1, -1, 2.5 } }, x)
    x:transpose(1, 2):select(2, 3):fill(7)
    assert.tensor_equal({ { 2.5, -1, -1, 2.5 }, { 2.5, -1, -1, 2.5 }, { 7, 7, 7, 7 } }, x)
    local big = cs.zeros({ 2 }, { dtype = "int64", device = dev }):fill(0x7ffffffffffffff1LL)
    assert.equal(2, big:eq(cs.tensor({ 0x7ffffffffffffff1LL, 0x7ffffffffffffff1LL }, { dtype = "int64", device = dev })):sum())
    assert.tensor_equal({ true, true }, cs.zeros({ 2 }, { dtype = "bool", device = dev }):fill(true))
  end)

  it("copy sets x from y of any dtype, broadcasting y", function()
    local x = cs.zeros({ 2, 3 }, { device = dev, dtype = "int32" })
    assert.is_true(rawequal(x, x:copy(T({ { 1.7, -2.7, 3 }, { 4, 5, 6 } }, "float64"))))
    assert.tensor_equal({ { 1, -2, 3 }, { 4, 5, 6 } }, x)
    x:copy(T({ 9, 8, 7 }))
    assert.tensor_equal({ { 9, 8, 7 }, { 9, 8, 7 } }, x)
    x:transpose(1, 2):copy(T({ { 1, 2 }, { 3, 4 }, { 5, 6 } }))
    assert.tensor_equal({ { 1, 3, 5 }, { 2, 4, 6 } }, x)
    -- copy from an overlapping view of itself
    local y = T({ 1, 2, 3, 4, 5 })
    y:narrow(1, 2, 4):copy(y:narrow(1, 1, 4))
    assert.tensor_equal({ 1, 1, 2, 3, 4 }, y)
  end)
end)

H.each_device("allclose and max_abs_diff", function(dev, it)
  local function T(v, dt) return cs.tensor(v, { device = dev, dtype = dt or "float64" }) end

  it("follow numpy's rule |a - b| <= atol + rtol |b|", function()
    local b = T({ 1, 100, 0 })
    assert.is_true(cs.allclose(T({ 1 + 0.9e-5, 100, 0 }), b))
    assert.is_false(cs.allclose(T({ 1 + 2e-5, 100, 0 }), b))
    assert.is_true(cs.allclose(T({ 1, 100 + 0.9e-3, 0 }), b))
    assert.is_false(cs.allclose(T({ 1, 100, 2e-8 }), b))
    assert.is_true(cs.allclose(T({ 1, 100, 2e-8 }), b, { atol = 1e-7 }))
    assert.is_true(cs.allclose(T({ 1.1, 110, 0 }), b, { rtol = 0.1 }))
    assert.is_false(cs.allclose(T({ 1.2, 110, 0 }), b, { rtol = 0.1 }))
  end)

  it("treat NaN as different unless equal_nan, and infinities by sign", function()
    local a = T({ 1, nan, inf })
    assert.is_false(cs.allclose(a, a))
    assert.is_true(cs.allclose(a, a, { equal_nan = true }))
    assert.is_false(cs.allclose(T({ inf }), T({ -inf }), { equal_nan = true }))
    assert.is_false(cs.allclose(T({ inf }), T({ 1e308 }), { rtol = 1 }))
  end)

  it("broadcast and accept tables", function()
    assert.is_true(cs.allclose(T({ { 1, 2 }, { 1, 2 } }), T({ 1, 2 })))
    assert.is_true(cs.allclose(T({ 1, 2 }), { 1, 2 }))
    assert.is_false(cs.allclose(T({ 1, 2 }), { 1, 3 }))
  end)

  it("max_abs_diff gives the largest difference, NaN where a NaN meets a number", function()
    assert.equal(0.5, cs.max_abs_diff(T({ 1, 2, 3 }), T({ 1, 2.5, 3 })))
    assert.equal(0, cs.max_abs_diff(T({ 1, 2 }), T({ 1, 2 })))
    local m = cs.max_abs_diff(T({ 1, nan }), T({ 1, 2 }))
    assert.is_true(m ~= m)
    assert.equal(4, cs.max_abs_diff(T({ 1, 2 }, "int32"), T({ 5, 2 }, "float32")))
  end)

  it("work across devices", function()
    local a = T({ 1, 2, 3 })
    assert.is_true(cs.allclose(a, a:cpu()))
    assert.equal(0, cs.max_abs_diff(a:cpu(), a))
  end)
end)

describe("operators in compiled code", function()
  it("stay tensor operations in hot loops (in a child process, in case the VM breaks)", function()
    -- LuaJIT's trace recorder turns `cdata pointer + number` into pointer arithmetic; tensors must
    -- reach their metamethods however hot the loop gets
    local out, status = H.run_lua([[
      local cs = require("cuscan")
      local x = cs.tensor({ 1, 2, 3 }, { device = "cpu" })
      local bad = 0
      for i = 1, 3000 do
        for _, y in ipairs({ x + 1.5, x - 2.5, 1.25 + x, 2 * x, x / 4, -x, x + x }) do
          if not cs.is_tensor(y) or y:numel() ~= 3 then bad = bad + 1 end
        end
      end
      io.write("bad ", bad, " last ", (x + 1.5):totable()[3])
    ]])
    assert.equal(0, status, out)
    assert.equal("bad 0 last 4.5", out)
  end)
end)

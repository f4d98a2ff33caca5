-- CUDA against the CPU (GPU host only; pending with the reason elsewhere): random shapes, lines
-- long enough to span many blocks, strided dims with long columns, large tensors checked on
-- sampled lines, special values, transfers, and the 3 x 2^30 tensor (#slow).
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local GiB = 2 ^ 30

-- CUDA result against the CPU result of the same scan on the same values.
local function agree(x_cpu, dim, op, opts, len)
  local fn = op == "sum" and "cumsum" or "cumprod"
  local o_cpu, o_gpu = {}, {}
  for k, v in pairs(opts or {}) do o_cpu[k], o_gpu[k] = v, v end
  if o_cpu.mask then o_gpu.mask = o_cpu.mask:cuda() end
  local want = cs[fn](x_cpu, dim, o_cpu)
  local got = cs[fn](x_cpu:cuda(), dim, o_gpu)
  assert.equal("cpu", want.device)
  assert.equal("cuda", got.device)
  assert.equal(want.dtype, got.dtype)
  if H.is_int_dtype[want.dtype] then
    assert.tensor_equal(want, got)
  else
    local rtol, atol = H.tol(want.dtype, op, len)
    assert.tensor_near(want, got, rtol, atol)
  end
  return want, got
end

local function values(shape, dtype, op, seed)
  local base = cs.rand(shape, { seed = seed, dtype = "float64", device = "cpu" })
  if dtype == "bool" then return base:lt(0.5) end
  if dtype == "int32" or dtype == "int64" then
    return op == "prod" and ((base * 4):to(dtype) * 2 - 3) or (base * 2000 - 1000):to(dtype)
  end
  if op == "prod" then return (base * 0.02 + 0.99):to(dtype) end
  return (base * 2 - 1):to(dtype)
end

describe("CUDA against the CPU #cuda", function()
  local it = H.cuda_it()

  it("agree on random shapes, dims, views, dtypes and flags", function()
    local rng = H.rng(H.seed_for("cuda random shapes"))
    for i = 1, 60 do
      local c = H.random_case(rng, 2000000, 4, 200000)
      local name = ("case %d: %s"):format(i, H.case_text(c))
      H.replay(c.seed, name, function()
        local x, mask, reset = H.case_inputs(c)
        local y, idx = H.run_case(c, x, mask, reset)
        local yd, idxd = H.run_case(c, x:cuda(), mask and mask:cuda() or nil, reset and reset:cuda() or nil)
        if idx then assert.tensor_equal(idx, idxd) end
        if H.is_int_dtype[c.odtype] then assert.tensor_equal(y, yd)
        elseif c.op == "max" or c.op == "min" then assert.tensor_equal(y, yd, { strict = true })
        else
          local rtol, atol = H.tol(c.odtype, c.op, H.case_len(c, x))
          assert.tensor_near(y, yd, rtol, atol)
        end
      end)
    end
  end)

  for _, op in ipairs({ "sum", "prod" }) do
    for _, dtype in ipairs({ "float32", "float64", "int32", "int64" }) do
      it(("agree on long lines spanning many blocks: %s %s"):format(op, dtype), function()
        for _, len in ipairs({ 100003, 1048583, 4194304 + 1, 2 ^ 21 }) do  -- odd: one element a lane; 2^21: vectors
          local x = values({ 2, len }, dtype, op, len)
          local m = cs.rand({ 2, len }, { seed = len + 1, device = "cpu" }):lt(0.8)
          for _, f in ipairs({ {}, { reverse = true }, { exclusive = true }, { mask = m }, { reverse = true, exclusive = true, mask = m } }) do
            agree(x, 2, op, f, len)
          end
        end
      end)
    end
  end

  it("agree on many long lines (a block walks each line, masked in half-size tiles)", function()
    -- 600 lines fill the device with walking blocks; 10000 is a multiple of every vector width
    -- (vector loads), 9999 is not (one element a lane)
    for _, len in ipairs({ 10000, 9999 }) do
      local m = cs.rand({ 600, len }, { seed = len, device = "cpu" }):lt(0.6)
      for _, dtype in ipairs({ "float32", "float64", "int32" }) do
        local x = values({ 600, len }, dtype, "sum", len + 1)
        agree(x, 2, "sum", { mask = m }, len)
        agree(x, 2, "sum", { mask = m, reverse = true, exclusive = true }, len)
        agree(x, 2, "sum", {}, len)
        agree(values({ 600, len }, dtype, "prod", len + 2), 2, "prod", { mask = m, reverse = true }, len)
      end
      -- bool counted into wider integers (their whole-lines kernel has a launch bound of its own),
      -- into a poisoned out
      local b = values({ 600, len }, "bool", "sum", len + 3)
      for _, dtype in ipairs({ "int32", "int64" }) do
        for _, o in ipairs({ {}, { mask = m, reverse = true }, { exclusive = true } }) do
          local want = cs.cumsum(b, 2, { dtype = dtype, mask = o.mask, reverse = o.reverse, exclusive = o.exclusive })
          local out = cs.full({ 600, len }, H.poison(dtype), { dtype = dtype, device = "cuda" })
          cs.cumsum(b:cuda(), 2, { dtype = dtype, mask = o.mask and o.mask:cuda(), reverse = o.reverse,
                                   exclusive = o.exclusive, out = out })
          assert.tensor_equal(want, out)
        end
      end
    end
  end)

  it("agree along strided dims with long columns", function()
    for _, case in ipairs({ { { 200003, 3 }, 1 }, { { 100000, 64 }, 1 }, { { 64, 4096, 16 }, 2 },
                            { { 3, 50000, 5 }, 2 }, { { 1000, 1000 }, 1 }, { { 16, 5000 }, 1 }, { { 9, 3, 700 }, 1 },
                            -- a few hundred column strips: unmasked, blocks walk whole strips
                            -- instead of looking back
                            { { 500, 300, 2 }, 2 }, { { 16, 520, 1024 }, 2 } }) do
      local shape, dim = case[1], case[2]
      local m = cs.rand(shape, { seed = #shape * 11 + dim, device = "cpu" }):lt(0.7)
      for _, dtype in ipairs({ "float32", "float64", "int32" }) do
        local x = values(shape, dtype, "sum", #shape * 7 + dim)
        agree(x, dim, "sum", {}, shape[dim])
        agree(x, dim, "sum", { reverse = true, exclusive = true }, shape[dim])
        agree(x, dim, "sum", { mask = m }, shape[dim])
        agree(x, dim, "sum", { mask = m, reverse = true }, shape[dim])
        agree(x:transpose(1, #shape), #shape + 1 - dim, "sum", {}, shape[dim])
        agree(values(shape, dtype, "prod", 3), dim, "prod", { reverse = true }, shape[dim])
      end
    end
  end)

  it("scan a 16384 x 16384 tensor correctly along both dims (sampled lines)", function()
    local n = 16384
    local x = cs.rand({ n, n }, { seed = 5, device = "cuda" })
    local m = cs.rand({ n, n }, { seed = 6, device = "cuda" }):lt(0.5)
    local rng = H.rng(H.seed_for("large sampled"))
    for _, dim in ipairs({ 1, 2 }) do
      for _, opts in ipairs({ {}, { reverse = true }, { mask = m, exclusive = true } }) do
        local y = x:cumsum(dim, opts)
        for _ = 1, 6 do
          local i = rng:int(1, n)
          local other = 3 - dim
          local line = x:select(other, i):cpu()
          local mline = opts.mask and opts.mask:select(other, i):cpu() or nil
          local want = line:cumsum(1, { reverse = opts.reverse, exclusive = opts.exclusive, mask = mline })
          assert.tensor_near(want, y:select(other, i), 1e-5, 1e-3)
        end
      end
    end
  end)

  it("take the same random numbers, transfers and special values on both devices", function()
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      local a = cs.rand({ 333, 77 }, { seed = 9, dtype = dtype, device = "cpu" })
      local b = cs.rand({ 333, 77 }, { seed = 9, dtype = dtype, device = "cuda" })
      assert.is_true(H.bits(a) == H.bits(b))
    end
    for _, dtype in ipairs(cs.dtypes) do
      local x = values({ 1000, 3 }, dtype, "sum", 4)
      assert.is_true(H.bits(x) == H.bits(x:cuda():cpu()))
      assert.is_true(H.bits(x:transpose(1, 2)) == H.bits(x:transpose(1, 2):cuda()))
    end
    local nan, inf = 0 / 0, math.huge
    local sv = { 1, nan, -0.0, inf, -inf, 2 ^ -149, -0.0, 3 }
    local mv = { true, false, true, true, false, true, true, true }
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      local x = cs.tensor(sv, { dtype = dtype, device = "cpu" })
      local m = cs.tensor(mv, { device = "cpu" })
      for _, op in ipairs({ "cumsum", "cumprod" }) do
        for _, f in ipairs({ {}, { mask = m }, { mask = m, reverse = true }, { exclusive = true, mask = m } }) do
          local g = {}
          for k, v in pairs(f) do g[k] = v end
          if g.mask then g.mask = g.mask:cuda() end
          local want, got = x[op](x, 1, f):totable(), x:cuda()[op](x:cuda(), 1, g):totable()
          for i = 1, #want do
            local w, v = want[i], got[i]
            if w ~= w then assert.is_true(v ~= v)
            else
              assert.equal(w, v)
              assert.equal(1 / w, 1 / v)  -- the sign of zero
            end
          end
        end
      end
    end
  end)

  it("agree on the toolkit ops", function()
    local a = cs.rand({ 300, 41 }, { seed = 1, device = "cpu" }) + 0.1
    local b = cs.rand({ 41 }, { seed = 2, device = "cpu" }) - 0.5
    local ad, bd = a:cuda(), b:cuda()
    assert.tensor_near(a + b, ad + bd)
    assert.tensor_near(a * b - 2, ad * bd - 2)
    assert.tensor_near(1 / a, 1 / ad)
    assert.tensor_near(a:log(), ad:log())
    assert.tensor_near(a:exp():sqrt(), ad:exp():sqrt())
    assert.tensor_near(a:pow(1.5), ad:pow(1.5))
    assert.tensor_equal(a:lt(0.5), ad:lt(0.5))
    assert.tensor_near(a:sum(1), ad:sum(1), 1e-5, 1e-4)
    assert.near(a:sum(), ad:sum(), 1e-3)
    assert.equal(a:max(), ad:max())
    assert.tensor_equal(cs.cat({ a, a }, 2), cs.cat({ ad, ad }, 2))
  end)

  it("agree on reductions along every dim, lines side by side or one after another, and views", function()
    H.with_rng("cuda reductions", function(rng)
      -- 37 x 1000 x 70: dim 1 and dim 2 reduce lines that lie side by side (the GPU folds them a thread a
      -- line, in pieces), dim 3 lines that lie one after another; the transposed view swaps the cases
      local x = cs.rand({ 37, 1000, 70 }, { seed = rng:int(1, 1e9), device = "cpu" }) - 0.25
      local views = { x, x:transpose(1, 3), x:narrow(2, 3, 900) }
      for _, v in ipairs(views) do
        local vd = v:cuda()
        for d = 1, 3 do
          for _, op in ipairs({ "sum", "mean" }) do
            local want, got = v[op](v, d), vd[op](vd, d)
            assert.equal(want.dtype, got.dtype)
            assert.tensor_near(want, got:cpu(), 1e-5, 1e-4)
          end
          assert.tensor_equal(v:max(d), vd:max(d):cpu())
          assert.tensor_equal(v:min(d), vd:min(d):cpu())
        end
      end
      -- float32 matrices along dim 1: four lines a thread where rows are 16-byte aligned, else one
      local m = cs.rand({ 1001, 4096 }, { seed = rng:int(1, 1e9), device = "cpu" }) - 0.5
      for _, v in ipairs({ m, m:narrow(2, 2, 4092), m:narrow(2, 5, 4088), m:narrow(1, 3, 640) }) do
        local vd = v:cuda()
        assert.tensor_near(v:sum(1), vd:sum(1):cpu(), 1e-5, 1e-4)
        assert.tensor_near(v:mean(1), vd:mean(1):cpu(), 1e-5, 1e-6)
        assert.tensor_equal(v:max(1), vd:max(1):cpu())
        assert.tensor_equal(v:min(1), vd:min(1):cpu())
      end
      local i = cs.tensor(H.build({ 300, 50 }, function() return rng:int(-1000, 1000) end), { dtype = "int64" })
      assert.tensor_equal(i:sum(1), i:cuda():sum(1):cpu())
      assert.tensor_equal(i:max(1), i:cuda():max(1):cpu())
      assert.tensor_equal(i:min(2), i:cuda():min(2):cpu())
    end)
  end)

  it("scan a float32 tensor of 3 x 2^30 elements along each dim (sampled lines) #slow", function()
    local x = cs.rand({ 3, GiB }, { seed = 21, device = "cuda" })
    -- dim 2: three lines of 2^30; check one whole line and windows of the others
    local y = x:cumsum(2)
    local line = x:select(1, 2):cpu()
    assert.tensor_near(line:cumsum(1), y:select(1, 2), 1e-4, 1e-2)
    line = nil
    for _, r in ipairs({ 1, 3 }) do
      local got = y:select(1, r):narrow(1, GiB - 999, 1000):cpu()
      local want = x:select(1, r):cpu():cumsum(1):narrow(1, GiB - 999, 1000)
      assert.tensor_near(want, got, 1e-4, 1e-2)
    end
    y = nil
    collectgarbage()
    -- dim 1: 2^30 lines of 3; sample windows across the whole range
    local z = x:cumprod(1, { reverse = true })
    for _, start in ipairs({ 1, 2 ^ 29 + 12345, GiB - 4095 }) do
      local xs = x:narrow(2, start, 4096):cpu()
      assert.tensor_near(xs:cumprod(1, { reverse = true }), z:narrow(2, start, 4096), 1e-6, 1e-7)
    end
  end)
end)

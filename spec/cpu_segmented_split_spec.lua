-- The CPU's long segmented lines (issue 13 / issue 15): a segmented scan of fewer lines than threads,
-- each at least 2^16 elements, cuts each line into a span a thread; each span is walked from the
-- op's identity, then the steps before its first reset are walked again from the state before it
-- (past a reset nothing before it counts). The result is the walk of one thread, bit for bit: checked
-- against that walk written in plain Lua (float64 sums and products, cummax values and indices), and
-- across OMP_NUM_THREADS in child processes for every op (logcumsumexp included, whose chunks of 64
-- steps count from the line's start), with spans that hold no reset, resets at a span's first step,
-- masks, reverse, exclusive, initial values, and in place (out = x).
local cs = require("cuscan")
local H = require("spec.helpers")
local shell = require("spec.support.shell")
require("cuscan.assertions")

-- the walk of one thread over a line (Lua arrays; 1-based), opts {op, reverse, exclusive, mask, reset, initial}
local function walk(xs, opts)
  local n, rev, excl, op = #xs, opts.reverse, opts.exclusive, opts.op
  local ident = op == "cumprod" and 1.0 or op == "cummax" and -1 / 0 or -0.0
  local empty = op == "cumprod" and 1.0 or op == "cummax" and -1 / 0 or 0.0
  local acc, at, first = opts.initial or ident, 0, opts.initial == nil
  local out, idx = {}, {}
  for k = 1, n do
    local i = rev and n + 1 - k or k
    if opts.reset[i] then acc, at, first = ident, 0, true end
    local before, before_at = acc, at
    local keep = not opts.mask or opts.mask[i]
    local v = xs[i]
    if op == "cummax" then
      if keep and (v ~= v or v >= acc) then acc, at = v, i end
    else
      if not keep then v = op == "cumprod" and 1.0 or 0.0 end
      acc = op == "cumprod" and acc * v or acc + v
    end
    if excl then
      out[i], idx[i] = first and empty or before, first and 0 or before_at
    else
      out[i], idx[i] = acc, at
    end
    first = false
  end
  return out, idx
end

local function flags(n, rng, p, from, to)
  local t = {}
  for i = 1, n do t[i] = i >= from and i <= to and rng:bool(p) end
  return t
end

describe("CPU long segmented lines cut into spans", function()
  it("give the walk of one thread, bit for bit (float64 sums, products, cummax with indices)", function()
    local rng = H.rng(H.seed_for("cpu segmented spans"))
    local n = 2 ^ 17 + 3
    for _, op in ipairs({ "cumsum", "cumprod", "cummax" }) do
      for case = 1, 4 do
        local seed = rng:int(1, 1e9)
        H.replay(seed, ("%s case %d"):format(op, case), function()
          local xs = {}
          for i = 1, n do
            xs[i] = op == "cumprod" and 1 + (rng:uniform() - 0.5) * 1e-3 or op == "cummax" and rng:int(-50, 50) or
                    rng:uniform() - 0.5
          end
          -- resets sparse in the first half, none in the second (whole spans walked again), or every step
          local reset = case == 4 and flags(n, rng, 1, 1, n) or flags(n, rng, 1e-4, 1, math.floor(n / 2))
          reset[math.floor(n / 2) + 1] = case == 2   -- (a reset on what is a span's first step on two threads)
          local mask = case >= 3 and flags(n, rng, 0.7, 1, n) or nil
          local opts = { op = op, reverse = case % 2 == 0, exclusive = case == 3,
                         initial = case == 1 and op ~= "cummax" and 0.25 or nil, mask = mask, reset = reset }
          local want, want_i = walk(xs, opts)
          local x = cs.tensor({ xs }, { dtype = "float64", device = "cpu" })
          local r = cs.tensor({ reset }, { dtype = "bool", device = "cpu" })
          local m = mask and cs.tensor({ mask }, { dtype = "bool", device = "cpu" })
          local o = { reverse = opts.reverse, exclusive = opts.exclusive, reset = r, mask = m,
                      initial = opts.initial }
          assert.matches("cpu rows %(general walk%): 1 lines of " .. n, cs.explain(x, 2, (function()
            local e = { op = op } for k, v in pairs(o) do e[k] = v end return e end)()))
          local got, got_i = x[op](x, 2, o)
          assert.is_true(H.bits(got) == H.bits(cs.tensor({ want }, { dtype = "float64" })),
                         "values differ from the walk of one thread")
          if got_i then assert.same({ want_i }, got_i:totable()) end
          -- in place (out = x): each step read before it is written
          if not got_i then
            o.out = x
            x[op](x, 2, o)
            assert.is_true(H.bits(x) == H.bits(got), "in place, values differ")
          end
        end)
      end
    end
  end)

  it("give the same bits on 1, 2, 3 and 5 threads, every op", function()
    local chunk = [[
      local cs = require("cuscan")
      local H = require("spec.helpers")
      local n = 2 ^ 18 + 11
      local x = cs.rand({ 2, n }, { seed = 17, dtype = "float64" }) * 200 - 100
      local r = cs.rand({ 2, n }, { seed = 18 }):lt(1e-4)
      local r2 = cs.where(cs.arange(n):ge(n / 3):reshape({ 1, n }), false, r)   -- none past the first third
      local m = cs.rand({ 2, n }, { seed = 19 }):lt(0.7)
      local ramp = cs.arange(n):reshape({ 1, n }):to("float64") * 1e-3
      local parts = {}
      for _, op in ipairs({ "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp" }) do
        -- (r2 leaves the last spans of a forward walk without a reset, and the first of a reverse one)
        for _, o in ipairs({ { reset = r }, { reset = r2, mask = m, reverse = true }, { reset = r, exclusive = true },
                             { reset = r2 } }) do
          -- (a slow ramp: each step counts in logcumsumexp's last bits)
          local y = op == "cumprod" and (x * 1e-4 + 1) or op == "logcumsumexp" and (x * 1e-2 + ramp) or x
          local a, b = y[op](y, 2, o)
          parts[#parts + 1] = H.bits(a)
          if b then parts[#parts + 1] = H.bits(b) end
          local f = y:to("float32")
          parts[#parts + 1] = H.bits((f[op](f, 2, o)))
          if not b then   -- in place
            o.out = f
            f[op](f, 2, o)
            parts[#parts + 1] = H.bits(f)
          end
        end
      end
      local sum = 0
      for _, p in ipairs(parts) do
        for i = 1, #p do sum = (sum * 31 + p:byte(i)) % 2147483647 end
      end
      io.write(sum)
    ]]
    local outs = shell.on_threads(chunk, { 1, 2, 3, 5 })
    assert.matches("^%d+$", outs[1])
    for k = 2, #outs do assert.equal(outs[1], outs[k]) end
  end)
end)

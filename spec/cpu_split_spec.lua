-- The CPU's long lines (issue 13): when a scan has at most 16 lines of at least 2^16 elements, each
-- line is cut into blocks of 4096 elements in walk order and shared by the cores in two passes.
-- The result follows one rule whatever the number of threads: each block's total taken from the
-- identity, the totals chained in line order into each block's carry, each block scanned from its
-- carry. Where a line's own elements are contiguous (its blocks side by side), a block's total is
-- folded in 8 lanes, element k of the block (in walk order) into lane k % 8, the lanes then folded
-- in order. Checked bit for bit against that rule written in plain Lua (float64 in and out, so that
-- every addition is the same double addition), and across OMP_NUM_THREADS in child processes.
local cs = require("cuscan")
local H = require("spec.helpers")
local shell = require("spec.support.shell")
require("cuscan.assertions")

local BLOCK, LANES = 4096, 8

-- the rule, for a line (a Lua array) and opts {reverse, exclusive, mask, op}
local function split_ref(xs, opts)
  local n, rev, excl, prod = #xs, opts.reverse, opts.exclusive, opts.op == "prod"
  local ident, masked = prod and 1.0 or -0.0, prod and 1.0 or 0.0
  local function at(k) -- the k-th element in walk order (1-based)
    local i = rev and n + 1 - k or k
    local v = xs[i]
    if opts.mask and not opts.mask[i] then v = masked end
    return i, v
  end
  local function op(a, b) if prod then return a * b end return a + b end
  local out, carry = {}, ident
  for b0 = 1, n, BLOCK do
    local b1 = math.min(b0 + BLOCK - 1, n)
    local lanes = {}
    for j = 1, LANES do lanes[j] = ident end
    for k = b0, b1 do
      local _, v = at(k)
      local j = (k - b0) % LANES + 1
      lanes[j] = op(lanes[j], v)
    end
    local total = ident
    for j = 1, LANES do total = op(total, lanes[j]) end
    local acc = carry
    for k = b0, b1 do
      local i, v = at(k)
      local before = acc
      acc = op(acc, v)
      out[i] = excl and (k == 1 and masked or before) or acc
    end
    carry = op(carry, total)
  end
  return out
end

describe("the CPU's split long lines", function()
  local n = 2 ^ 16 + 3 * BLOCK + 77 -- a short last block
  for _, case in ipairs({
    { name = "cumsum" },
    { name = "reverse exclusive masked cumsum", reverse = true, exclusive = true, masked = true },
    { name = "cumprod", op = "prod" },
  }) do
    it(case.name .. " of float64 follows the block rule bit for bit", function()
      H.with_rng("split " .. case.name, function(rng)
        local xs, mask = {}, case.masked and {} or nil
        for i = 1, n do
          xs[i] = case.op == "prod" and 1 + (rng:uniform(-1, 1)) * 1e-4 or rng:uniform(-1, 1)
          if mask then mask[i] = rng:bool(0.6) end
        end
        local x = cs.tensor({ xs }, { dtype = "float64", device = "cpu" })
        local m = mask and cs.tensor({ mask }, { device = "cpu" }) or nil
        local scan = case.op == "prod" and cs.cumprod or cs.cumsum
        local y = scan(x, 2, { reverse = case.reverse, exclusive = case.exclusive, mask = m })
        assert.matches("split", cs.explain(x, 2, { op = case.op == "prod" and "cumprod" or "cumsum", mask = m }))
        local want = cs.tensor({ split_ref(xs, { reverse = case.reverse, exclusive = case.exclusive, mask = mask,
                                                 op = case.op }) }, { dtype = "float64" })
        assert.tensor_equal(want, y, { strict = true })
        -- and within the contract's tolerance of the in-order fold
        local ref = H.scan_ref({ xs }, 2, { op = case.op or "sum", reverse = case.reverse, exclusive = case.exclusive,
                                            mask = mask and { mask } or nil })
        H.assert_result(ref, y, "float64", case.op or "sum", n)
      end)
    end)
  end

  it("gives the same bits on 1, 2 and 3 threads, for a line, a few lines and a few long columns", function()
    local chunk = [[
      local cs = require("cuscan")
      local H = require("spec.helpers")
      local x = cs.rand({ 3, 2 ^ 17 + 5 }, { seed = 7, dtype = "float64" }) - 0.5
      local c = cs.rand({ 2 ^ 17 + 9, 5 }, { seed = 8 }) - 0.5
      local m = cs.rand({ 3, 2 ^ 17 + 5 }, { seed = 9 }):lt(0.7)
      local parts = { H.bits(x:narrow(1, 1, 1):cumsum(2)), H.bits(x:cumsum(2, { reverse = true, mask = m })),
                      H.bits(c:cumsum(1, { exclusive = true })), H.bits((x * 1e-3 + 1):cumprod(-1)) }
      local sum = 0
      for _, p in ipairs(parts) do
        for i = 1, #p, 7 do sum = (sum * 31 + p:byte(i)) % 2147483647 end
      end
      io.write(sum)
    ]]
    local outs = shell.on_threads(chunk, { 1, 2, 3 })
    assert.equal(outs[1], outs[2])
    assert.equal(outs[1], outs[3])
  end)
end)

-- The CPU's scans along the middle dim of {outer, L, inner} with few lines side by side (inner 2-15
-- but 8): dense slabs walked a few whole slabs at a time, other layouts below 8 lines as segments
-- (eight lines of any slabs at a time), rather than as tiles of inner lanes; and short dense rows
-- (L below 8, inner 1) eight lines at a time; one long dense slab of 3-7 lines split across threads
-- in blocks, a few blocks' lines at a time. Each output must be the in-order
-- float64 prefix of its line rounded once (long lines: the contract's blocks of 4096, their totals
-- chained in order), bit for bit against plain Lua, for every flag, float dtype pair and op;
-- outputs are poisoned first.
local cs = require("cuscan")
local H = require("spec.helpers")
require("cuscan.assertions")

local BLOCK = 4096   -- a split line's block (src/cpu/scan.c, FOLD_BLOCK)

local function round(y, dtype)
  if dtype == "float32" then return H.f32(y) end
  if dtype == "float64" then return y end
  return H.round_half(y, dtype)
end

-- a line (its elements in index order) as the contract folds it: in walk order from the op's
-- identity; `blocks`: cut into blocks of BLOCK in walk order, each block's total folded from the
-- identity, the totals chained in order into each block's carry
local function line_ref(xs, ms, o, dtype, blocks)
  local n, prod = #xs, o.op == "prod"
  local id, masked_as = prod and 1.0 or -0.0, prod and 1.0 or 0.0
  local function at(k)
    local i = o.reverse and n + 1 - k or k
    local v = xs[i]
    if ms and not ms[i] then v = masked_as end
    return i, v
  end
  local out, carry = {}, id
  local size = blocks and BLOCK or n
  for b0 = 1, n, size do
    local b1 = math.min(n, b0 + size - 1)
    local acc = carry
    for k = b0, b1 do
      local i, v = at(k)
      local before = acc
      if prod then acc = acc * v else acc = acc + v end
      local y = o.exclusive and (k == 1 and masked_as or before) or acc
      out[i] = round(y, dtype)
    end
    if blocks then
      local total = id
      for k = b0, b1 do
        local _, v = at(k)
        if prod then total = total * v else total = total + v end
      end
      if prod then carry = carry * total else carry = carry + total end
    else
      carry = acc
    end
  end
  return out
end

local FLAGS = {
  {}, { reverse = true }, { exclusive = true }, { masked = true },
  { reverse = true, exclusive = true, masked = true }, { op = "prod" }, { op = "prod", reverse = true, exclusive = true },
}
local PAIRS = { { "float32", "float32" }, { "float64", "float64" }, { "float32", "float64" }, { "bfloat16", "bfloat16" } }

-- view: x and mask narrowed from slabs one line wider (not dense)
local function check(rng, shape, pair, o, blocks, walk, view)
  local wide = { shape[1], shape[2], shape[3] + (view and 1 or 0) }
  local x = cs.rand(wide, { seed = rng:next(), device = "cpu" }) * 2 - 1
  if o.op == "prod" then x = x * 1e-3 + 1 end
  x = x:to(pair[1])
  local mask = o.masked and cs.rand(wide, { seed = rng:next(), device = "cpu" }):lt(0.6) or nil
  if view then x, mask = x:narrow(3, 2, shape[3]), mask and mask:narrow(3, 2, shape[3]) end
  local out = cs.empty(shape, { dtype = pair[2], device = "cpu" }):fill(0 / 0)
  local opts = { reverse = o.reverse, exclusive = o.exclusive, mask = mask, out = out, dtype = pair[2] }
  local plan = cs.explain(x, 2, { op = o.op == "prod" and "cumprod" or "cumsum", reverse = o.reverse,
                                  exclusive = o.exclusive, mask = mask, dtype = pair[2], out = out })
  assert.matches(walk, plan, 1, true)
  local _ = (o.op == "prod" and cs.cumprod or cs.cumsum)(x, 2, opts)
  local outer, inner = shape[1], shape[3]
  for _, line in ipairs({ { 1, 1 }, { rng:int(1, outer), rng:int(1, inner) }, { outer, inner } }) do
    local xs = x:select(1, line[1]):select(2, line[2]):to("float64"):totable()
    local ms = mask and mask:select(1, line[1]):select(2, line[2]):totable() or nil
    local want = cs.tensor(line_ref(xs, ms, o, pair[2], blocks), { dtype = pair[2], device = "cpu" })
    assert.tensor_equal(want, out:select(1, line[1]):select(2, line[2]), { strict = true },
                        ("line %d, %d of %s"):format(line[1], line[2], plan))
  end
end

describe("the CPU's narrow columns", function()
  it("inner 2 to 15 but 8, dense slabs and views: each line's in-order float64 prefix, bit for bit, every flag", function()
    local rng = H.rng(H.seed_for("cpu narrow columns"))
    for _, inner in ipairs({ 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15 }) do
      for fi, o in ipairs(FLAGS) do
        for _, view in ipairs({ false, true }) do
          local pair = PAIRS[(inner + fi) % #PAIRS + 1]
          local shape = { rng:int(1, 40), rng:int(2, 700), inner }
          -- views: segments below 8 lines, tiles from 9
          local walk = not view and "whole slabs walked together" or inner < 8 and "8 lines walked together"
                       or "lines side by side"
          H.replay(rng:next(), ("%s %s %d%s"):format(table.concat(shape, "x"), pair[1], fi, view and " view" or ""), function()
            check(rng, shape, pair, o, false, walk, view)
          end)
        end
      end
    end
  end)

  it("short rows (2 to 7 elements) walk eight lines at a time: each line's in-order prefix, every flag", function()
    local rng = H.rng(H.seed_for("cpu short rows"))
    for len = 2, 7 do
      for fi, o in ipairs(FLAGS) do
        local pair = PAIRS[(len + fi) % #PAIRS + 1]
        local shape = { rng:int(1, 3000), len, 1 }
        H.replay(rng:next(), ("%s %s %d"):format(table.concat(shape, "x"), pair[1], fi), function()
          check(rng, shape, pair, o, false, "short lines walked eight together")
        end)
      end
    end
  end)

  it("inner 8 and 16 stay tiles of lines side by side, with the same bits as the contract", function()
    local rng = H.rng(H.seed_for("cpu narrow columns, 8"))
    for fi, o in ipairs(FLAGS) do
      check(rng, { 5, 300, 8 }, PAIRS[fi % #PAIRS + 1], o, false, "lines side by side")
      check(rng, { 3, 200, 16 }, PAIRS[fi % #PAIRS + 1], o, false, "lines side by side")
    end
  end)

  it("a few long narrow lines split across threads in blocks, the contract's bits", function()
    local rng = H.rng(H.seed_for("cpu narrow long lines"))
    for fi, o in ipairs({ {}, { reverse = true, exclusive = true, masked = true }, { op = "prod" } }) do
      for _, shape in ipairs({ { 1, 70001, 2 }, { 2, 65536, 3 } }) do
        check(rng, shape, PAIRS[fi], o, true, "long lines split across threads")
      end
    end
  end)

  it("one long dense slab of 3 to 7 lines split in blocks walks a slab's lines together, the contract's bits", function()
    local rng = H.rng(H.seed_for("cpu narrow split slabs"))
    for inner = 3, 7 do
      for fi, o in ipairs(FLAGS) do
        if (fi + inner) % 2 == 0 then   -- half the flags a width, all of them over the widths
          check(rng, { 1, 65536 + rng:int(1, 9000), inner }, PAIRS[(fi + inner) % #PAIRS + 1], o, true,
                "blocks of 4096, a slab's lines walked together")
        end
      end
    end
  end)
end)

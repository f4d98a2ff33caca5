-- Masked scans in the CUDA column family (GPU host only; pending with the reason elsewhere). A warp
-- reads its mask rows in 16-byte vectors where the mask's layout allows (columns contiguous, rows
-- 16-byte aligned, the warp's columns all inside the strip) and byte by byte elsewhere; warps of
-- one block may take different paths. Each shape below puts warps on one path or the other or
-- both: inner a multiple of 32 / 64 or not, rows shorter than a warp's 32, mask views whose rows
-- are not 16-byte aligned or whose columns are not contiguous. Results against the CPU backend,
-- into a poisoned out, with NaN and infinities under the false mask elements.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

-- {outer, len, inner}: both paths, short and long columns, inner past a warp's last column
local SHAPES = { { 2, 40, 64 }, { 1, 700, 128 }, { 3, 33, 96 }, { 2, 5, 256 }, { 1, 1000, 48 },
                 { 2, 300, 80 }, { 4, 31, 32 }, { 1, 65, 512 } }
local PAIRS = { { "float32", "float32" }, { "float64", "float64" }, { "float32", "float64" }, { "float16", "float16" },
                { "int32", "int64" }, { "bool", "int64" } }

-- x with NaN and infinities where the mask is false (floats): none may reach an output.
local function poisoned_under(x, m, rng)
  if x.dtype == "bool" or x.dtype == "int32" or x.dtype == "int64" then return x end
  local bad = rng:bool() and (0 / 0) or (rng:bool() and math.huge or -math.huge)
  return cs.where(m, x, bad)
end

-- Mask layouts, each a tensor made on the CPU (`wide`) and a view of it taken the same way on
-- either device: dense; rows `inner + 16` apart, starting at column 1 (rows 16-byte aligned when
-- inner is) or 2 (no row aligned); columns 2 apart (not contiguous: the byte path everywhere).
local LAYOUTS = {
  dense = { wide = function(o, l, n) return { o, l, n } end, view = function(w) return w end },
  ["aligned pad"] = { wide = function(o, l, n) return { o, l, n + 16 } end,
                      view = function(w, n) return w:narrow(3, 1, n) end },
  ["shifted pad"] = { wide = function(o, l, n) return { o, l, n + 16 } end,
                      view = function(w, n) return w:narrow(3, 2, n) end },
  ["strided"] = { wide = function(o, l, n) return { o, l, n, 2 } end,
                  view = function(w) return w:select(4, 2) end },
}
local KINDS = { "dense", "aligned pad", "shifted pad", "strided" }

describe("masked column scans #cuda", function()
  local it = H.cuda_it()
  after_each(function() if cs.cuda_available() then cs.force_family(nil) end end)

  it("agree with the CPU on every mask layout, both load paths", function()
    local rng = H.rng(H.seed_for("masked columns"))
    for si, shape in ipairs(SHAPES) do
      for k, kind in ipairs(KINDS) do
        local pair = PAIRS[(si + k) % #PAIRS + 1]
        local op = (pair[1] == "bool" or rng:bool(0.6)) and "cumsum" or "cumprod"
        local reverse, exclusive = rng:bool(), rng:bool(0.3)
        local p = rng:pick({ 0.6, 0.05, 0.95 })
        local seed = rng:int(1, 1e9)
        local case = ("columns %s, %s mask p=%.2f, %s -> %s %s%s%s"):format(table.concat(shape, "x"), kind, p, pair[1],
          pair[2], op, reverse and " reverse" or "", exclusive and " exclusive" or "")
        H.replay(seed, case, function()
          local L = LAYOUTS[kind]
          local wide = cs.rand(L.wide(shape[1], shape[2], shape[3]), { seed = seed + 1, device = "cpu" }):lt(p)
          local m, md = L.view(wide, shape[3]), L.view(wide:cuda(), shape[3])
          local x = poisoned_under(H.scan_input(shape, pair[1], op, seed, "cpu"), m, rng)
          local o = { mask = m, reverse = reverse, exclusive = exclusive, dtype = pair[2] }
          local want = cs[op](x, 2, o)
          local xd = x:cuda()
          cs.force_family("columns/lookback")
          o.mask = md
          assert.matches("^cuda columns/", cs.explain(xd, 2, { op = op, mask = md, reverse = reverse,
                                                              exclusive = exclusive, dtype = pair[2] }))
          o.out = cs.full(shape, H.poison(pair[2]), { dtype = pair[2], device = "cuda" })
          H.assert_scan_like_cpu(want, cs[op](xd, 2, o), pair[2], op, shape[2])
        end)
      end
    end
  end)
end)

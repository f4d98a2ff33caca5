-- Every kernel family and mode of the CUDA planner, forced on small shapes it can handle (GPU host
-- only; pending with the reason elsewhere): the plan names the family that ran, and its results
-- agree with the CPU (integers exactly, float32, float16 and bfloat16 within 1 ulp: both round a
-- float64 prefix once), into a poisoned out, in place, from misaligned views, and bit for bit from
-- run to run.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

-- {outer, len, inner} shapes scanned along dim 2, per family/mode: odd and prime lengths, len 1
-- and 2, inner 1..2000 (wide rows in column blocks), slabs longer than a tile.
local SHAPES = {
  ["slabs/whole"] = { { 5, 3, 7 }, { 1000, 2, 3 }, { 64, 999, 1 }, { 3, 1, 5 }, { 7, 3, 2000 }, { 33, 4, 128 },
                      { 2, 7, 1 }, { 1, 13, 1 }, { 300, 17, 2 } },
  ["slabs/walk"] = { { 3, 5000, 3 }, { 2, 20000, 1 }, { 4, 700, 600 }, { 5, 300, 64 }, { 3, 9001, 2 } },
  -- (the long strips hold more pieces than the device runs at once: a few narrow strips join their
  -- pieces by a window of flags, a single wide strip through a tree of their sums, more strips
  -- through chains of look-backs)
  ["slabs/lookback"] = { { 3, 5000, 3 }, { 2, 20000, 1 }, { 4, 700, 600 }, { 1, 300, 64 }, { 1, 40000, 5 },
                         { 1, 2000000, 5 }, { 3, 400000, 16 }, { 1, 300000, 64 }, { 32, 40000, 2 }, { 5, 250000, 1 } },
  ["rows/segmented"] = { { 1000, 8, 1 }, { 301, 12, 1 } },
  ["rows/single"] = { { 50, 3000, 1 }, { 7, 12, 1 } },
  ["rows/lines"] = { { 40, 20000, 1 }, { 9, 5003, 1 } },
  ["rows/pieces"] = { { 2, 50000, 1 }, { 1, 100003, 1 } },
  ["columns/lookback"] = { { 3, 500, 70 }, { 2, 3000, 1000 } },
  ["columns/walk"] = { { 3, 500, 70 }, { 2, 3000, 1000 } },
}
local ORDER = { "slabs/whole", "slabs/walk", "slabs/lookback", "rows/segmented", "rows/single", "rows/lines",
                "rows/pieces", "columns/lookback", "columns/walk" }

local PAIRS = { { "float32", "float32" }, { "float64", "float64" }, { "float32", "float64" }, { "int32", "int64" },
                { "int64", "int64" }, { "bool", "int32" }, { "float16", "float16" }, { "bfloat16", "bfloat16" },
                { "float16", "float32" }, { "bfloat16", "float64" } }

local input = H.scan_input

local check = H.assert_scan_like_cpu

describe("kernel families #cuda", function()
  local it = H.cuda_it()
  after_each(function() if cs.cuda_available() then cs.force_family(nil) end end)

  for _, family in ipairs(ORDER) do
    it(family .. ": forced, it runs and agrees with the CPU", function()
      local rng = H.rng(H.seed_for("families " .. family))
      cs.force_family(family)
      for si, shape in ipairs(SHAPES[family]) do
        for k = 1, #PAIRS do
          local pair = PAIRS[(si + k) % #PAIRS + 1]
          local op = (pair[1] == "bool" or rng:bool(0.6)) and "cumsum" or "cumprod"
          local opts = { reverse = rng:bool(), exclusive = rng:bool(0.3), dtype = pair[2] }
          local masked = rng:bool(0.4) and family ~= "columns/walk"   -- masked column scans never walk
          local seed = rng:int(1, 1e9)
          local case = ("%s %s %s -> %s %s%s%s%s"):format(family, table.concat(shape, "x"), pair[1], pair[2], op,
            opts.reverse and " reverse" or "", opts.exclusive and " exclusive" or "", masked and " masked" or "")
          H.replay(seed, case, function()
            local x = input(shape, pair[1], op, seed, "cpu")
            local m = masked and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.6) or nil
            local o_cpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype, mask = m }
            local want = cs[op](x, 2, o_cpu)
            local xd = x:cuda()
            local out = cs.full(shape, H.poison(pair[2]), { dtype = pair[2], device = "cuda" })
            local o_gpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype,
                            mask = m and m:cuda(), out = out }
            local plan = cs.explain(xd, 2, { op = op, reverse = opts.reverse, exclusive = opts.exclusive,
                                             dtype = opts.dtype, mask = o_gpu.mask, out = out })
            assert.equal("cuda " .. family .. ":", plan:sub(1, #family + 6), plan)
            local got = cs[op](xd, 2, o_gpu)
            check(want, got, pair[2], op, shape[2])
            -- bit for bit again
            local again = cs[op](xd, 2, { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype,
                                          mask = o_gpu.mask })
            assert.is_true(H.bits(got) == H.bits(again), "a second run gave other bits")
          end)
        end
      end
    end)
  end

  it("slabs: full tiles, whose segments all take the loops without a test a row, agree with the CPU", function()
    -- large enough that whole tiles and look-back pieces are full: slabs of 2, 5, 31, 63, 64, 65 and
    -- 999 rows (a head every other row up to one in several tiles), long strips of 2 and 3 columns
    local shapes = { { 2 ^ 22, 2, 1 }, { 2 ^ 19, 5, 3 }, { 2 ^ 20, 31, 1 }, { 2 ^ 17, 63, 3 }, { 2 ^ 18, 64, 1 },
                     { 2 ^ 16, 65, 2 }, { 2 ^ 13, 999, 1 }, { 4, 2 ^ 20, 2 }, { 1, 2 ^ 21, 3 } }
    local pairs = { { "float16", "float16" }, { "bfloat16", "bfloat16" }, { "float32", "float32" },
                    { "float64", "float64" }, { "int32", "int64" }, { "float32", "float64" } }
    for si, shape in ipairs(shapes) do
      for k = 1, 3 do
        local pair = pairs[(si + 2 * k) % #pairs + 1]
        local seed = H.seed_for(("full tiles %s %s %d"):format(table.concat(shape, "x"), pair[1], k))
        local rng = H.rng(seed)
        local opts = { reverse = rng:bool(), exclusive = rng:bool(0.4), dtype = pair[2] }
        local masked = rng:bool(0.3)
        local case = ("%s %s -> %s%s%s%s"):format(table.concat(shape, "x"), pair[1], pair[2],
          opts.reverse and " reverse" or "", opts.exclusive and " exclusive" or "", masked and " masked" or "")
        local family = shape[2] > 4096 and "slabs/lookback" or "slabs/whole"
        cs.force_family(family)
        H.replay(seed, case, function()
          local x = input(shape, pair[1], "cumsum", seed, "cpu")
          local m = masked and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.6) or nil
          local want = x:cumsum(2, { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype, mask = m })
          local xd = x:cuda()
          local out = cs.full(shape, H.poison(pair[2]), { dtype = pair[2], device = "cuda" })
          local o_gpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = opts.dtype,
                          mask = m and m:cuda(), out = out }
          local plan = cs.explain(xd, 2, o_gpu)
          assert.equal("cuda " .. family .. ":", plan:sub(1, #family + 6), plan)
          check(want, cs.cumsum(xd, 2, o_gpu), pair[2], "cumsum", shape[2])
        end)
      end
    end
  end)

  it("slabs/lookback: few narrow strips join by a window of flags, one wide strip by a tree, more by chains", function()
    local JOINS = { window = "pieces joined by a window of flags", tree = "pieces joined by a tree" }
    for _, case in ipairs({ { { 1, 2000000, 5 }, "window" }, { { 2, 400000, 16 }, "window" }, { { 3, 5000, 3 }, "window" },
                            { { 1, 300000, 64 }, "tree" }, { { 32, 40000, 2 }, "chains" } }) do
      local x = cs.empty(case[1], { device = "cuda" })
      local plan = cs.explain(x, 2)
      assert.matches("^cuda slabs/lookback:", plan)
      for join, words in pairs(JOINS) do
        assert.equal(case[2] == join, plan:find(words, 1, true) ~= nil, plan)
      end
    end
  end)

  it("slabs/lookback: many pieces that wait on a front take the window's tiles (4- and 8-byte outputs)", function()
    -- windows unmasked; the tree of a single strip masked too, where x and out share a type
    -- (forced to slabs: the planner sends some of these shapes to columns on Hopper)
    local window, tree, few = { 4, 400000, 16 }, { 1, 800000, 64 }, { 3, 5000, 3 }
    cs.force_family("slabs")
    local function in_class(shape, pair, masked)
      local x = cs.empty(shape, { device = "cuda", dtype = pair[1] })
      local o = { dtype = pair[2], mask = masked and cs.empty(shape, { device = "cuda", dtype = "bool" }) or nil }
      local plan = cs.explain(x, 2, o)
      assert.matches("^cuda slabs/lookback:", plan)
      return plan:find("in window tiles", 1, true) ~= nil
    end
    for _, pair in ipairs(PAIRS) do
      local wide = pair[2] ~= "float16" and pair[2] ~= "bfloat16"
      local name = pair[1] .. " -> " .. pair[2]
      assert.equal(wide, in_class(window, pair, false), name)
      assert.is_false(in_class(window, pair, true), name)
      assert.equal(wide, in_class(tree, pair, false), name)
      assert.equal(wide and pair[1] == pair[2], in_class(tree, pair, true), name)
      assert.no.matches("in window tiles", cs.explain(cs.empty(few, { device = "cuda", dtype = pair[1] }), 2, { dtype = pair[2] }))
    end
  end)

  it("slabs/whole: 4-byte outputs take the larger tiles where a tile grows there (Hopper), and agree with the CPU", function()
    -- {shape, masked, larger}: many short slabs (a tile grows by a fifth: taken; by an eighth: not),
    -- masked slabs the smaller class cuts into pieces, and masked tiles that double
    local CASES = { { { 2 ^ 22, 2, 1 }, false, true }, { { 12000, 8, 64 }, false, true }, { { 2 ^ 13, 999, 1 }, false, false },
                    { { 40, 128, 64 }, true, true }, { { 2 ^ 13, 999, 4 }, true, true }, { { 2 ^ 14, 2, 3 }, true, false },
                    { { 64, 999, 1 }, false, false } }
    local hopper = cs.device_info().major >= 9
    for ci, case in ipairs(CASES) do
      for _, pair in ipairs({ { "float32", "float32" }, { "float16", "float32" }, { "bool", "int32" } }) do
        local shape, name = case[1], ("%s %s -> %s%s"):format(table.concat(case[1], "x"), pair[1], pair[2],
                                                              case[2] and " masked" or "")
        local seed = H.seed_for("large slab tiles " .. name)
        H.replay(seed, name, function()
          local x = input(shape, pair[1], "cumsum", seed, "cpu")
          local m = case[2] and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.6) or nil
          local opts = { reverse = ci % 2 == 0 and not case[2], exclusive = ci % 3 == 0, dtype = pair[2] }
          local want = x:cumsum(2, { reverse = opts.reverse, exclusive = opts.exclusive, dtype = pair[2], mask = m })
          local out = cs.full(shape, H.poison(pair[2]), { dtype = pair[2], device = "cuda" })
          local o_gpu = { reverse = opts.reverse, exclusive = opts.exclusive, dtype = pair[2], mask = m and m:cuda(), out = out }
          local xd = x:cuda()
          local plan = cs.explain(xd, 2, o_gpu)
          assert.matches("^cuda slabs/", plan)
          assert.equal(case[3] and hopper, plan:find("in large tiles", 1, true) ~= nil, plan)
          check(want, cs.cumsum(xd, 2, o_gpu), pair[2], "cumsum", shape[2])
        end)
      end
    end
  end)

  it("slabs: in place, and from views whose base is not 16-byte aligned", function()
    for _, shape in ipairs({ { 9, 7, 3 }, { 4, 3001, 5 }, { 5, 33, 600 } }) do
      for _, mode in ipairs({ "slabs/whole", "slabs/walk", "slabs/lookback" }) do
        for _, dtype in ipairs({ "float32", "float16", "bfloat16" }) do
          cs.force_family(mode)
          local seed = H.seed_for("slab views " .. mode .. table.concat(shape, "x") .. dtype)
          H.replay(seed, mode .. " " .. table.concat(shape, "x") .. " " .. dtype, function()
            -- one more slab in front: the view starts len * inner elements into the storage
            local big = input({ shape[1] + 1, shape[2], shape[3] }, dtype, "cumsum", seed, "cpu")
            local x = big:narrow(1, 2, shape[1])
            local m = cs.rand({ shape[1] + 1, shape[2], shape[3] }, { seed = seed + 1, device = "cpu" }):lt(0.5):narrow(1, 2, shape[1])
            local want = x:cumsum(2, { mask = m, reverse = true })
            local xd, md = big:cuda():narrow(1, 2, shape[1]), m:contiguous():cuda()
            check(want, xd:cumsum(2, { mask = md, reverse = true }), dtype, "cumsum", shape[2])
            local inplace = xd:clone()
            inplace:cumsum(2, { out = inplace })
            check(x:cumsum(2), inplace, dtype, "cumsum", shape[2])
          end)
        end
      end
    end
  end)

  it("2-byte floats from views one element past a vector boundary, in every family", function()
    for _, family in ipairs(ORDER) do
      cs.force_family(family)
      local shape = SHAPES[family][1]
      local n = shape[1] * shape[2] * shape[3]
      for _, dtype in ipairs({ "float16", "bfloat16" }) do
        local seed = H.seed_for("half views " .. family .. dtype)
        H.replay(seed, family .. " " .. dtype, function()
          -- one element in front: the view starts 2 bytes into the storage
          local flat = input({ n + 1 }, dtype, "cumsum", seed, "cpu")
          local want = flat:narrow(1, 2, n):reshape(shape):cumsum(2, { reverse = true })
          local got = flat:cuda():narrow(1, 2, n):reshape(shape):cumsum(2, { reverse = true })
          check(want, got, dtype, "cumsum", shape[2])
        end)
      end
    end
  end)

  it("slabs: whole and look-back tiles agree with the CPU, to the stream's last partial vector", function()
    -- totals that are not a multiple of 16 elements (the last vectors of x and of the mask are
    -- partial), tiles starting inside a vector, whole slabs and look-back pieces
    local shapes = { { 3, 5001, 3 }, { 1, 40001, 5 }, { 7, 3, 3 }, { 1001, 9, 1 }, { 2, 3001, 7 } }
    local pairs = { { "float32", "float32" }, { "float64", "float64" }, { "float16", "float16" }, { "bool", "int32" },
                    { "float32", "float64" }, { "int32", "int64" } }
    for si, shape in ipairs(shapes) do
      for k, pair in ipairs(pairs) do
        for _, mode in ipairs({ "slabs/whole", "slabs/lookback" }) do
          local seed = H.seed_for(("landed %s %s %s %s"):format(table.concat(shape, "x"), pair[1], pair[2], mode))
          local rng = H.rng(seed)
          local masked, reverse, exclusive = (si + k) % 2 == 0, rng:bool(), rng:bool(0.3)
          local case = ("%s %s %s -> %s%s%s%s"):format(mode, table.concat(shape, "x"), pair[1], pair[2],
            masked and " masked" or "", reverse and " reverse" or "", exclusive and " exclusive" or "")
          H.replay(seed, case, function()
            cs.force_family(mode)
            local x = input(shape, pair[1], "cumsum", seed, "cpu")
            local m = masked and cs.rand(shape, { seed = seed + 1, device = "cpu" }):lt(0.6) or nil
            local want = x:cumsum(2, { mask = m, reverse = reverse, exclusive = exclusive, dtype = pair[2] })
            local xd, md = x:cuda(), m and m:cuda()
            local out = cs.full(shape, H.poison(pair[2]), { dtype = pair[2], device = "cuda" })
            local o = { mask = md, reverse = reverse, exclusive = exclusive, dtype = pair[2], out = out }
            local plan = cs.explain(xd, 2, o)
            assert.equal("cuda slabs/", plan:sub(1, 11), plan)   -- (a slab longer than a tile is not whole)
            check(want, xd:cumsum(2, o), pair[2], "cumsum", shape[2])
            if pair[1] == pair[2] then   -- in place
              local inplace = xd:clone()
              inplace:cumsum(2, { mask = md, reverse = reverse, exclusive = exclusive, out = inplace })
              check(want, inplace, pair[2], "cumsum", shape[2])
            end
          end)
        end
      end
    end
  end)

  it("a forced family that cannot take a call leaves it to the planner, with the same results", function()
    local x = cs.rand({ 40, 30, 20 }, { seed = 7, device = "cpu" })
    local view = x:narrow(3, 2, 15)   -- rows of 15 at a stride of 20: not one dense layout
    cs.force_family("slabs")
    local plan = cs.explain(x:cuda():narrow(3, 2, 15), 2)
    assert.is_nil(plan:match("^cuda slabs"), plan)
    check(view:cumsum(2), x:cuda():narrow(3, 2, 15):cumsum(2), "float32", "cumsum", 30)
  end)

  it("explain names the family the planner picks for the shape space's corners", function()
    local function family(shape, dim, dtype)
      return cs.explain(cs.zeros(shape, { device = "cuda", dtype = dtype }), dim):match("^cuda ([%w]+)/")
    end
    assert.equal("slabs", family({ 2 ^ 20, 2, 2 }, 2))
    assert.equal("slabs", family({ 12345, 999 }, 2))
    assert.equal("slabs", family({ 3, 333333, 7 }, 2))
    assert.equal("rows", family({ 4096, 4096 }, 2))
    assert.equal("columns", family({ 4096, 4096 }, 1))
    assert.equal("rows", family({ 2 ^ 16, 8 }, 2, "bfloat16"))
    -- 8 rows of a wide inner fit a slab tile whole; 9 go to the column family
    assert.equal("slabs", family({ 64, 8, 512 }, 2))
    assert.equal("columns", family({ 64, 9, 512 }, 2))
    -- one long line of a length vectors cannot cover: line pieces element by element, unless masked
    -- or short
    assert.equal("rows", family({ 1, 65537 }, 2))
    assert.equal("slabs", family({ 1, 65535 }, 2))
    assert.equal("slabs", family({ 3, 65537 }, 2))
    local line = cs.zeros({ 1, 65537 }, { device = "cuda" })
    assert.matches("^cuda slabs/", cs.explain(line, 2, { mask = line:gt(0) }))
    -- masked packed lines into 8-byte outputs that a slab tile holds whole go to slabs; on Hopper
    -- lines of at most 1024 into 4-byte outputs too, masked or not
    local hopper = cs.device_info().major >= 9
    local rows64 = cs.zeros({ 1024, 1024 }, { device = "cuda", dtype = "float64" })
    assert.matches("^cuda slabs/", cs.explain(rows64, 2, { mask = rows64:gt(0) }))
    assert.matches("^cuda rows/", cs.explain(rows64, 2))
    local rows32 = cs.zeros({ 1024, 1024 }, { device = "cuda" })
    assert.matches(hopper and "^cuda slabs/" or "^cuda rows/", cs.explain(rows32, 2, { mask = rows32:gt(0) }))
    assert.matches(hopper and "^cuda slabs/" or "^cuda rows/", cs.explain(rows32, 2))
    assert.matches("^cuda rows/", cs.explain(cs.zeros({ 1024, 1028 }, { device = "cuda" }), 2))
    assert.matches("^cuda rows/", cs.explain(rows64:to("int32"), 2, { dtype = "int64" }))
    local rows4000 = cs.zeros({ 128, 4000 }, { device = "cuda" })
    assert.matches("^cuda rows/", cs.explain(rows4000, 2, { mask = rows4000:gt(0) }))
    -- on Hopper: short columns a unit would split across warps go to slabs; narrow rows go to
    -- columns where slabs would be look-back pieces (not where slabs are whole); masked columns
    -- of an odd width (one column a lane) go to slabs, of an even width stay
    assert.equal(hopper and "slabs" or "columns", family({ 1000, 9, 256 }, 2))
    assert.equal("columns", family({ 1000, 9, 4096 }, 2))
    assert.equal(hopper and "columns" or "slabs", family({ 2, 262144, 121 }, 2, "float64"))
    assert.equal("slabs", family({ 4, 400000, 16 }, 2, "float64"))   -- a window of flags joins these
    assert.equal("slabs", family({ 2000, 128, 21 }, 2, "float64"))
    assert.equal(hopper and "columns" or "slabs", family({ 2, 150000, 215 }, 2))
    local odd = cs.zeros({ 50, 281, 1207 }, { device = "cuda" })
    assert.matches(hopper and "^cuda slabs/" or "^cuda columns/", cs.explain(odd, 2, { mask = odd:gt(0) }))
    local even = cs.zeros({ 50, 281, 1208 }, { device = "cuda" })
    assert.matches("^cuda columns/", cs.explain(even, 2, { mask = even:gt(0) }))
  end)

  it("one long line of odd length through the row family's pieces agrees with the CPU", function()
    local seed = H.seed_for("families odd long line")
    for _, n in ipairs({ 65537, 300001 }) do
      for _, dtype in ipairs({ "float32", "float64", "float16", "int32" }) do
        local x = input({ 1, n }, dtype, "cumsum", seed + n, "cpu")
        local xd = x:cuda()
        assert.matches("^cuda rows/", cs.explain(xd, 2))
        for _, reverse in ipairs({ false, true }) do
          local want = cs.cumsum(x, 2, { reverse = reverse })
          local out = cs.full({ 1, n }, H.poison(want.dtype), { dtype = want.dtype, device = "cuda" })
          local got = cs.cumsum(xd, 2, { reverse = reverse, out = out })
          check(want, got, want.dtype, "cumsum", n)
        end
      end
    end
  end)

end)

describe("kernel families", function()
  it("force_family refuses names it does not know, and explain describes a scan without running it", function()
    assert.error_matches(function() cs.force_family("slab") end, "unknown kernel family 'slab'")
    assert.error_matches(function() cs.force_family(3) end, "force_family: name: expected")
    cs.force_family("slabs/walk")
    cs.force_family(nil)
    local x = cs.rand({ 4, 6 }, { device = "cpu" })
    local y = cs.full({ 4, 6 }, 5, { device = "cpu" })
    assert.matches("^cpu rows: 4 lines of 6", cs.explain(x, 2))
    assert.matches("^cpu columns: 6 lines of 4, masked, reverse", cs.explain(x, 1, { reverse = true, mask = x:gt(0.5), op = "cumprod" }))
    assert.tensor_equal(cs.full({ 4, 6 }, 5, { device = "cpu" }), y)
    assert.error_matches(function() cs.explain(x, 3) end, "explain: dim: 3 is out of range")
    assert.error_matches(function() cs.explain(x, 1, { op = "cumfoo" }) end, "explain: op: expected")
    assert.matches("^cpu rows %(general walk%): 4 lines of 6, indices", cs.explain(x, 2, { op = "cummax" }))
    assert.matches("^cpu rows %(general walk%): 4 lines of 6, segmented, reverse", cs.explain(x, 2, { op = "logcumsumexp", reverse = true,
                                                                                     reset = x:gt(0.5) }))
  end)
end)

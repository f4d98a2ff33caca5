-- The oracle in spec/helpers.lua is what every scan spec trusts: check it against values worked
-- out by hand from the definitions, so that a wrong oracle cannot pass silently.
local H = require("spec.helpers")

describe("the plain-Lua oracle", function()
  it("computes inclusive and exclusive sums and products of a line", function()
    assert.same({ 1, 3, 6, 10 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum" }))
    assert.same({ 0, 1, 3, 6 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", exclusive = true }))
    assert.same({ 1, 2, 6, 24 }, H.scan_line({ 1, 2, 3, 4 }, { op = "prod" }))
    assert.same({ 1, 1, 2, 6 }, H.scan_line({ 1, 2, 3, 4 }, { op = "prod", exclusive = true }))
  end)

  it("walks from the end when reversed", function()
    assert.same({ 10, 9, 7, 4 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reverse = true }))
    assert.same({ 9, 7, 4, 0 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reverse = true, exclusive = true }))
    assert.same({ 24, 24, 12, 4 }, H.scan_line({ 1, 2, 3, 4 }, { op = "prod", reverse = true }))
  end)

  it("skips masked-out elements, even NaN and Inf", function()
    local nan, inf = 0 / 0, math.huge
    local m = { true, false, true, false }
    assert.same({ 1, 1, 4, 4 }, H.scan_line({ 1, nan, 3, inf }, { op = "sum", mask = m }))
    assert.same({ 0, 1, 1, 4 }, H.scan_line({ 1, nan, 3, inf }, { op = "sum", mask = m, exclusive = true }))
    assert.same({ 3, 3, 3, 1 }, H.scan_line({ 2, -inf, 3, nan }, { op = "prod", mask = { false, false, true, false }, reverse = true }))
  end)

  it("wraps integers as two's complement in the output width", function()
    local r = H.scan_line({ 2147483647, 1 }, { op = "sum", dtype = "int32" })
    assert.equal(2147483647LL, r[1])
    assert.equal(-2147483648LL, r[2])
    local r64 = H.scan_line({ 2 ^ 62, 2 ^ 62 }, { op = "sum", dtype = "int64" })
    assert.equal(-0x8000000000000000LL, r64[2])
    local p = H.scan_line({ 65536, 65536 }, { op = "prod", dtype = "int32" })
    assert.equal(0LL, p[2])
    local b = H.scan_line({ true, false, true }, { op = "sum", dtype = "int64" })
    assert.same({ 1LL, 1LL, 2LL }, b)
  end)

  it("scans nested tables along each dim, negative dims from the end", function()
    local x = { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.same({ { 1, 2, 3 }, { 5, 7, 9 } }, H.scan_ref(x, 1, { op = "sum" }))
    assert.same({ { 1, 3, 6 }, { 4, 9, 15 } }, H.scan_ref(x, 2, { op = "sum" }))
    assert.same({ { 1, 3, 6 }, { 4, 9, 15 } }, H.scan_ref(x, -1, { op = "sum" }))
    assert.same({ { 6, 5, 3 }, { 15, 11, 6 } }, H.scan_ref(x, 2, { op = "sum", reverse = true }))
    local x3 = { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }
    assert.same({ { { 1, 2 }, { 3, 4 } }, { { 6, 8 }, { 10, 12 } } }, H.scan_ref(x3, 1, { op = "sum" }))
    assert.same({ { { 1, 2 }, { 4, 6 } }, { { 5, 6 }, { 12, 14 } } }, H.scan_ref(x3, 2, { op = "sum" }))
    assert.same({ { { 1, 2 }, { 3, 12 } }, { { 5, 30 }, { 7, 56 } } }, H.scan_ref(x3, 3, { op = "prod" }))
    assert.equal(5, H.scan_ref(5, 1, { op = "sum" }))
    assert.equal(0, H.scan_ref(5, 1, { op = "sum", exclusive = true }))
  end)

  it("takes running maxima and minima with their indices: ties to the later element, NaN takes over", function()
    local nan, inf = 0 / 0, math.huge
    local v, i = H.scan_line({ 1, 3, 2, 3, 5 }, { op = "max" })
    assert.same({ 1, 3, 3, 3, 5 }, v)
    assert.same({ 1, 2, 2, 4, 5 }, i)
    v, i = H.scan_line({ 1, 3, 2, 3, 5 }, { op = "min", reverse = true })
    assert.same({ 1, 2, 2, 3, 5 }, v)
    assert.same({ 1, 3, 3, 4, 5 }, i)
    v, i = H.scan_line({ 2, nan, 7, nan, 1 }, { op = "max" })
    assert.equal(2, v[1])
    for k = 2, 5 do assert.is_true(v[k] ~= v[k]) end
    assert.same({ 1, 2, 2, 4, 4 }, i)
    v, i = H.scan_line({ 0.0, -0.0 }, { op = "max" })
    assert.same({ 1, 2 }, i)
    assert.equal(-inf, 1 / v[2])
    v, i = H.scan_line({ 4, 9, 2 }, { op = "max", exclusive = true, dtype = "int32" })
    assert.same({ -2147483648LL, 4, 9 }, v)
    assert.same({ 0, 1, 2 }, i)
    v, i = H.scan_line({ 4, -inf, 2 }, { op = "min", mask = { false, true, false } })
    assert.same({ inf, -inf, -inf }, v)
    assert.same({ 0, 2, 2 }, i)
    v = H.scan_line({ false, true, false }, { op = "min", dtype = "bool", exclusive = true })
    assert.same({ true, false, false }, v)
  end)

  it("takes a running log-sum-exp with -inf as its identity", function()
    local nan, inf = 0 / 0, math.huge
    local y = H.scan_line({ 0, 0, math.log(2) }, { op = "lse" })
    assert.same({ 0, math.log(2), math.log(4) }, { y[1], y[2], y[3] })
    assert.is_true(math.abs(y[3] - math.log(4)) < 1e-15)
    y = H.scan_line({ 1000, 1000 }, { op = "lse", exclusive = true })
    assert.same({ -inf, 1000 }, y)
    assert.is_true(math.abs(H.scan_line({ 1000, 1000 }, { op = "lse" })[2] - (1000 + math.log(2))) < 1e-12)
    y = H.scan_line({ -inf, -inf, 3, inf, 5, nan, inf }, { op = "lse" })
    assert.same({ -inf, -inf, 3, inf, inf }, { y[1], y[2], y[3], y[4], y[5] })
    assert.is_true(y[6] ~= y[6] and y[7] ~= y[7])
  end)

  it("restarts at every true reset, in the walk's direction", function()
    local r = { false, true, false, true }
    assert.same({ 1, 2, 5, 4 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reset = r }))
    -- reversed, the segments met from the end are {4, 3} and {2, 1}
    assert.same({ 3, 2, 7, 4 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reset = r, reverse = true }))
    assert.same({ 0, 0, 2, 0 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reset = r, exclusive = true }))
    assert.same({ 2, 0, 4, 0 }, H.scan_line({ 1, 2, 3, 4 }, { op = "sum", reset = r, exclusive = true, reverse = true }))
    local v, i = H.scan_line({ 5, 2, 3, 1 }, { op = "max", reset = r })
    assert.same({ 5, 2, 3, 1 }, v)
    assert.same({ 1, 2, 3, 4 }, i)
    v, i = H.scan_line({ 5, 2, 3, 1 }, { op = "max", reset = r, mask = { true, false, true, true } })
    assert.same({ 5, -math.huge, 3, 1 }, v)
    assert.same({ 1, 0, 3, 4 }, i)
    local x = { { 1, 2 }, { 3, 4 } }
    assert.same({ { 1, 2 }, { 3, 4 } }, H.scan_ref(x, 1, { op = "sum", reset = { { true, true }, { true, true } } }))
    assert.same({ { 1, 2 }, { 3, 7 } }, H.scan_ref(x, 2, { op = "sum", reset = { { false, true }, { false, false } } }))
  end)

  it("replays: a failure message carries the seed and the case", function()
    local ok, err = pcall(H.replay, 1234, "case X", function() error("boom") end)
    assert.is_false(ok)
    assert.matches("case seed 1234", tostring(err), 1, true)
    assert.matches("case X", tostring(err), 1, true)
    assert.matches("boom", tostring(err), 1, true)
  end)

  it("draws different inputs for different seeds and the same for the same seed", function()
    local a, b, c = H.rng(1), H.rng(1), H.rng(2)
    local sa, sb, sc = {}, {}, {}
    for i = 1, 20 do sa[i], sb[i], sc[i] = a:uniform(), b:uniform(), c:uniform() end
    assert.same(sa, sb)
    assert.are_not.same(sa, sc)
    for i = 1, 20 do assert.is_true(sa[i] >= 0 and sa[i] < 1) end
  end)
end)

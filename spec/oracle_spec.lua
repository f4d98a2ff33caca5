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

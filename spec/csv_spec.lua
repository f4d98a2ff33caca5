-- cs.save and cs.load with .csv and .txt files: 1-d and 2-d tensors of every dtype round-trip (floats
-- bit for bit), the text is what NumPy's savetxt and loadtxt write and read, and malformed text is an
-- error naming the file, the line and the column.
local ffi = require("ffi")
local H = require("spec.helpers")
local cs = require("cuscan")
local shell = require("spec.support.shell")

local FIX = H.root .. "/spec/fixtures/numpy/"
local nan, inf = 0 / 0, math.huge

local f32box = ffi.new("float[1]")

local function lines(path)
  local t = {}
  for l in (shell.slurp(path) or ""):gmatch("([^\n]*)\n") do t[#t + 1] = l end
  return t
end

H.each_device(".csv and .txt files", function(dev, it)
  local dir
  H.temp_dir_each(function(d) dir = d end)

  it("round-trip float64 bit for bit, whatever the bits", function()
    H.with_rng("csv float64 " .. dev, function(rng)
      local flat = { 5e-324, -5e-324, 1.7976931348623157e308, -0.0, 0.0, nan, inf, -inf, 0.1 + 0.2 }
      for i = #flat + 1, 600 do flat[i] = rng:any_double() end
      local x = cs.tensor(flat, { dtype = "float64", device = dev }):reshape({ 200, 3 })
      for _, case in ipairs({ { "a.csv" }, { "b.txt" }, { "c.csv", { delimiter = ";" } }, { "d.txt", { delimiter = "\t" } } }) do
        local path = dir .. "/" .. case[1]
        cs.save(path, x, case[2])
        local y = cs.load(path, { device = dev, delimiter = case[2] and case[2].delimiter })
        assert.equal("float64", y.dtype)
        assert.equal(dev, y.device)
        assert.same({ 200, 3 }, y:shape())
        assert.equal(H.bits(x), H.bits(y), case[1])
      end
    end)
  end)

  it("round-trip float32, int32, int64 and bool exactly, 1-d and 2-d", function()
    H.with_rng("csv dtypes " .. dev, function(rng, seed)
      local f32 = {}
      for i = 1, 40 do
        f32box[0] = rng:any_double()
        f32[i] = f32box[0] == f32box[0] and f32box[0] or 1.5
      end
      local tensors = {
        cs.tensor(f32, { dtype = "float32", device = dev }):reshape({ 8, 5 }),
        cs.tensor({ -2147483648, 2147483647, 0, -7 }, { dtype = "int32", device = dev }),
        cs.tensor({ -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL, 9007199254740993LL, -3LL }, { dtype = "int64", device = dev })
          :reshape({ 2, 2 }),
        cs.rand({ 6, 7 }, { seed = seed, device = dev }):lt(0.5),
        cs.zeros({ 0 }, { device = dev, dtype = "int32" }),
      }
      for k, x in ipairs(tensors) do
        local path = ("%s/t%d.csv"):format(dir, k)
        cs.save(path, x)
        local y = cs.load(path, { dtype = x.dtype, device = dev })
        assert.same(x:shape(), y:shape())
        assert.equal(H.bits(x), H.bits(y), x.dtype)
      end
    end)
  end)

  it("writes the shortest text that reads back, and what NumPy writes for NaN and infinities", function()
    local path = dir .. "/v.txt"
    cs.save(path, cs.tensor({ 0.1, 1 / 3, 1e-300, -0.0, nan, inf, -inf, 123456789012 }, { dtype = "float64", device = dev }))
    assert.same({ "0.1", "0.3333333333333333", "1e-300", "-0", "nan", "inf", "-inf", "123456789012" },
                lines(path))
    cs.save(path, cs.tensor({ 0.1, 1 / 3, 16777217 }, { device = dev }))
    assert.same({ "0.1", "0.33333334", "16777216" }, lines(path))
    cs.save(path, cs.tensor({ { true, false } }, { device = dev }))
    assert.same({ "1 0" }, lines(path))
  end)

  it("writes and reads a header line", function()
    local x = cs.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int32", device = dev })
    cs.save(dir .. "/h.csv", x, { header = { "left", "right" } })
    assert.same({ "left,right", "1,2", "3,4" }, lines(dir .. "/h.csv"))
    local y, names = cs.load(dir .. "/h.csv", { header = true, dtype = "int32", device = dev })
    assert.same({ "left", "right" }, names)
    assert.same({ { 1, 2 }, { 3, 4 } }, y:totable())
    cs.save(dir .. "/h.txt", x, { header = "# any text" })
    assert.same({ "# any text", "1 2", "3 4" }, lines(dir .. "/h.txt"))
    -- without header = true a line starting with # is a comment
    assert.same({ { 1, 2 }, { 3, 4 } }, cs.load(dir .. "/h.txt", { dtype = "int32", device = dev }):totable())
  end)

  it("reads what NumPy's savetxt wrote, header included", function()
    local x, names = cs.load(FIX .. "savetxt_3x2.csv", { header = true, device = dev })
    assert.same({ "a", "b" }, names)
    assert.same({ { 0.1, -2.5 }, { 1e-300, 3 }, { math.pi, math.exp(1) } }, x:totable())
    local v = cs.load(FIX .. "savetxt_4.txt", { device = dev })
    assert.same({ 4 }, v:shape())
    assert.same({ 1.5, -2, 1e10, 0.1 + 0.2 }, v:totable())
  end)

  it("reads a column as a 1-d tensor, skips blank and comment lines, takes CRLF and a byte order mark", function()
    shell.spit(dir .. "/m.csv", "\239\187\191# made by hand\r\n1.5\r\n\r\n  -2  \r\n# more\n3e2\n")
    local x = cs.load(dir .. "/m.csv", { device = dev })
    assert.same({ 3 }, x:shape())
    assert.same({ 1.5, -2, 300 }, x:totable())
    shell.spit(dir .. "/w.txt", "1\t2   3\n 4 5 6 \n")
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, cs.load(dir .. "/w.txt", { device = dev }):totable())
    shell.spit(dir .. "/e.csv", "")
    assert.same({ 0 }, cs.load(dir .. "/e.csv", { device = dev }):shape())
    shell.spit(dir .. "/b.csv", "true,false,1,0\n")
    assert.same({ { true, false, true, false } }, cs.load(dir .. "/b.csv", { dtype = "bool", device = dev }):totable())
  end)
end)

describe(".csv and .txt errors", function()
  local dir
  H.temp_dir_each(function(d) dir = d end)

  local function bad_text(name, text, opts, needles)
    local path = dir .. "/" .. name
    shell.spit(path, text)
    local ok, err = pcall(cs.load, path, opts)
    assert.is_false(ok, text)
    assert.matches("^cuscan: load: " .. path:gsub("%p", "%%%0") .. ": ", err)
    for _, n in ipairs(needles) do assert.is_truthy(err:find(n, 1, true), err .. " should mention " .. n) end
  end

  it("malformed text names the file, the line and the column", function()
    bad_text("r.csv", "1,2\n3,4\n5\n", nil, { "line 3: 1 values, the rows before it have 2" })
    bad_text("n.csv", "1,2\n3,x4\n", nil, { "line 2, column 2: \"x4\" is not a number" })
    bad_text("h.csv", "0x10\n", nil, { "\"0x10\" is not a number" })
    bad_text("e.csv", "1,,2\n", nil, { "line 1, column 2: \"\" is not a number" })
    bad_text("i.csv", "2147483648\n", { dtype = "int32" }, { "\"2147483648\" is not an integer in int32's range" })
    bad_text("j.csv", "9223372036854775808\n", { dtype = "int64" }, { "is not an integer in int64's range" })
    bad_text("f.csv", "1.5\n", { dtype = "int64" }, { "\"1.5\" is not an integer" })
  end)

  it("a NUL byte anywhere is an error, not a line cut short", function()
    bad_text("z1.csv", "\0" .. "1,2\n3,4\n", nil, { "line 1: a NUL byte" })
    bad_text("z2.csv", "1,2\n\0\n", nil, { "line 2: a NUL byte" })
    bad_text("z3.txt", "1 2\n3 4\0 junk\n", nil, { "line 2: a NUL byte" })
    bad_text("z4.csv", "\0", nil, { "line 1: a NUL byte" })
  end)

  it("bad arguments name the argument", function()
    local x = cs.zeros({ 2, 2 })
    H.raises(function() cs.save(dir .. "/x.csv", cs.zeros({ 2, 2, 2 })) end, { "save: x: .csv files hold 1-d and 2-d tensors, got 3 dims" })
    H.raises(function() cs.save(dir .. "/x.txt", cs.zeros({})) end, { "save: x: .txt files hold 1-d and 2-d tensors, got 0 dims" })
    H.raises(function() cs.save(dir .. "/x.csv", x, { header = { "a" } }) end, { "save: header: 1 names for 2 columns" })
    H.raises(function() cs.save(dir .. "/x.csv", x, { header = { "a", 2 } }) end, { "save: header[2]: expected a string" })
    H.raises(function() cs.save(dir .. "/x.csv", x, { header = "a\nb" }) end, { "save: header: expected one line" })
    H.raises(function() cs.save(dir .. "/x.csv", x, { delimiter = "" }) end, { "save: delimiter: expected a non-empty string" })
    -- what could not be read back: a delimiter inside a number's text, a name holding the delimiter
    for _, d in ipairs({ "1", "-", "+", ".", "e", "n", ";0" }) do
      H.raises(function() cs.save(dir .. "/x.csv", x, { delimiter = d }) end, { "could be part of a number's text" })
    end
    H.raises(function() cs.save(dir .. "/x.csv", x, { header = { "a,b", "c" } }) end,
             { "save: header[1]: \"a,b\" holds the delimiter \",\"" })
    H.raises(function() cs.save(dir .. "/x.txt", x, { header = { "a", "b c" } }) end, { "save: header[2]:" })
    H.raises(function() cs.save(dir .. "/x.csv", x, { mmap = true }) end, { "save: opts: unknown option 'mmap'" })
    H.raises(function() cs.load(dir .. "/x.csv", { mmap = true }) end, { "load: mmap: this option does not apply to .csv files" })
    H.raises(function() cs.load(dir .. "/x.csv", { dtype = "complex64" }) end, { "load: dtype: expected a dtype" })
    assert.equal("", (H.shell("ls -A " .. H.quote(dir))))
  end)
end)

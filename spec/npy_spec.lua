-- cs.save and cs.load with .npy files: every dtype both ways, bit for bit; the files NumPy wrote
-- (spec/fixtures/numpy, made by make_fixtures.py there: C and Fortran order, big-endian, 0-d, empty,
-- format 1.0, 2.0 and 3.0); memory maps; every malformed file and failed save.
local H = require("spec.helpers")
local cs = require("cuscan")
local shell = require("spec.support.shell")

local FIX = H.root .. "/spec/fixtures/numpy/"
local nan, inf = 0 / 0, math.huge

-- A random tensor of dtype and shape on dev with values that test a format: floats over many
-- magnitudes with NaN, infinities, -0.0 and denormals among them; integers over their whole range;
-- booleans.
local function random_tensor(rng, dtype, shape, dev)
  local n = H.numel(shape)
  local flat = {}
  for i = 1, n do
    local v
    if dtype == "bool" then
      v = rng:bool()
    elseif dtype == "int32" then
      v = rng:bits32() - 2 ^ 31
    elseif dtype == "int64" then
      v = rng:int64()
    else
      local pick = rng:int(1, 20)
      if pick == 1 then v = nan elseif pick == 2 then v = inf elseif pick == 3 then v = -inf
      elseif pick == 4 then v = -0.0 elseif pick == 5 then v = 5e-324 * rng:int(1, 1000)
      else v = rng:uniform(-1, 1) * 10 ^ rng:int(-30, 30) end
    end
    flat[i] = v
  end
  if #shape == 0 then return cs.tensor(flat[1], { dtype = dtype, device = dev }) end
  return cs.tensor(flat, { dtype = dtype, device = dev }):reshape(shape)
end

-- Element values in row-major order, exactly: int64 as cdata, floats as numbers.
local function values(t)
  if t:numel() == 0 then return {} end
  return H.flatten(t:totable({ exact = true }), t:shape())
end

-- Values equal as the file keeps them: NaN equals NaN, -0.0 differs from +0.0.
local function same_value(a, b)
  if type(a) == "number" and type(b) == "number" then
    if a ~= a then return b ~= b end
    return a == b and 1 / a == 1 / b
  end
  return a == b
end

local function assert_values(expected, t, what)
  local got = values(t)
  assert.equal(#expected, #got, what)
  for i = 1, #expected do
    if not same_value(expected[i], got[i]) then
      error(("%s: element %d: expected %s, got %s"):format(what, i, tostring(expected[i]), tostring(got[i])), 2)
    end
  end
end

local I64_MIN, I64_MAX = -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL
local INT64_VALUES = { I64_MIN, 9007199254740993LL, -9007199254740995LL, I64_MAX }
local INT32_VALUES = { -2147483648, -1, 0, 7, 2147483647 }
local function sevenths(n)
  local t = {}
  for i = 1, n do t[i] = (i - 1) / 7 end
  return t
end
local function as_f32(list)
  local t = {}
  for i, v in ipairs(list) do t[i] = H.f32(v) end
  return t
end

-- The fixtures NumPy wrote: name, dtype, shape, values in row-major order.
local FIXTURES = {
  { "float32_2x3.npy", "float32", { 2, 3 }, as_f32(sevenths(6)) },
  { "float64_4.npy", "float64", { 4 }, { 0.1, 0.2, 0.1 + 0.2, -1e300 } },
  { "int32_5.npy", "int32", { 5 }, INT32_VALUES },
  { "int64_4.npy", "int64", { 4 }, INT64_VALUES },
  { "bool_2x2x2.npy", "bool", { 2, 2, 2 }, { true, false, false, true, false, false, true, false } },
  { "float64_fortran_3x4.npy", "float64", { 3, 4 }, { 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5 } },
  { "int32_bigendian_5.npy", "int32", { 5 }, INT32_VALUES },
  { "float64_bigendian_fortran_2x3.npy", "float64", { 2, 3 }, sevenths(6) },
  { "int64_bigendian_4.npy", "int64", { 4 }, INT64_VALUES },
  { "float32_bigendian_3.npy", "float32", { 3 }, as_f32({ 1.5, -0.25, 3e38 }) },
  { "float64_scalar.npy", "float64", {}, { 2.5 } },
  { "float32_0x3.npy", "float32", { 0, 3 }, {} },
  { "float64_special.npy", "float64", { 5 }, { nan, inf, -inf, -0.0, 5e-324 } },
  { "float32_v2_3.npy", "float32", { 3 }, { 1, 2, 3 } },
  { "int64_v3_2x2.npy", "int64", { 2, 2 }, { 1LL, -2LL, 3LL, -4LL } },
}

H.each_device(".npy files", function(dev, it)
  local dir
  H.temp_dir_each(function(d) dir = d end)

  it("round-trips every dtype, shape and layout bit for bit", function()
    H.with_rng("npy round trip " .. dev, function(rng)
      local shapes = { {}, { 0 }, { 7 }, { 3, 0, 2 }, { 4, 5 }, { 2, 3, 4 }, { 1, 9, 1, 3 }, { 2, 2, 2, 2, 3 } }
      for _, dtype in ipairs(cs.dtypes) do
        for k, shape in ipairs(shapes) do
          local x = random_tensor(rng, dtype, shape, dev)
          -- a transposed view is saved in its own (row-major) order
          if #shape >= 2 and rng:bool() then x = x:transpose(1, #shape) end
          local path = ("%s/%s_%d.npy"):format(dir, dtype, k)
          cs.save(path, x)
          local y = cs.load(path, { device = dev })
          assert.equal(dtype, y.dtype)
          assert.equal(dev, y.device)
          assert.same(x:shape(), y:shape())
          assert.equal(H.bits(x), H.bits(y), dtype .. " " .. table.concat(shape, "x"))
        end
      end
    end)
  end)

  it("writes the very bytes NumPy writes", function()
    local made = {
      ["float32_2x3.npy"] = (cs.arange(6, { dtype = "float64", device = dev }) / 7):to("float32"):reshape({ 2, 3 }),
      ["float64_4.npy"] = cs.tensor({ 0.1, 0.2, 0.1 + 0.2, -1e300 }, { dtype = "float64", device = dev }),
      ["int32_5.npy"] = cs.tensor(INT32_VALUES, { dtype = "int32", device = dev }),
      ["int64_4.npy"] = cs.tensor(INT64_VALUES, { dtype = "int64", device = dev }),
      ["bool_2x2x2.npy"] = cs.arange(8, { dtype = "int32", device = dev }):reshape({ 2, 2, 2 }):eq(0)
        :logical_or(cs.arange(8, { dtype = "int32", device = dev }):reshape({ 2, 2, 2 }):eq(3))
        :logical_or(cs.arange(8, { dtype = "int32", device = dev }):reshape({ 2, 2, 2 }):eq(6)),
      ["float64_scalar.npy"] = cs.tensor(2.5, { dtype = "float64", device = dev }),
      ["float32_0x3.npy"] = cs.zeros({ 0, 3 }, { device = dev }),
    }
    for name, x in pairs(made) do
      cs.save(dir .. "/" .. name, x)
      local want = shell.slurp(FIX .. name)
      local got = shell.slurp(dir .. "/" .. name)
      assert.equal(#want, #got, name)
      assert.equal(want, got, name)
      assert.equal(0, (#got - x:numel() * ({ float32 = 4, float64 = 8, int32 = 4, int64 = 8, bool = 1 })[x.dtype]) % 64)
    end
  end)

  it("reads the files NumPy wrote: C and Fortran order, big-endian, 0-d, empty, format 1.0 to 3.0", function()
    for _, f in ipairs(FIXTURES) do
      local name, dtype, shape, want = f[1], f[2], f[3], f[4]
      local x = cs.load(FIX .. name, { device = dev })
      assert.equal(dtype, x.dtype, name)
      assert.equal(dev, x.device, name)
      assert.same(shape, x:shape(), name)
      assert_values(want, x, name)
    end
  end)

  it("gives a Fortran-order array as a column-major view that scans like any other", function()
    local x = cs.load(FIX .. "float64_fortran_3x4.npy", { device = dev })
    assert.same({ 1, 3 }, x:stride())
    assert.is_false(x:is_contiguous())
    local rows = { { 0.5, 1.5, 2.5, 3.5 }, { 4.5, 5.5, 6.5, 7.5 }, { 8.5, 9.5, 10.5, 11.5 } }
    assert.tensor_equal(H.scan_ref(rows, 2), x:cumsum(2))
    assert.tensor_equal(H.scan_ref(rows, 1, { reverse = true }), x:cumsum(1, { reverse = true }))
  end)

  it("takes the format from opts.format whatever the extension", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    cs.save(dir .. "/data.bin", x, { format = "npy" })
    assert.equal("\147NUMPY", shell.slurp(dir .. "/data.bin"):sub(1, 6))
    assert.tensor_equal(x, cs.load(dir .. "/data.bin", { format = "npy", device = dev }))
    cs.save(dir .. "/UPPER.NPY", x)
    assert.tensor_equal(x, cs.load(dir .. "/UPPER.NPY", { device = dev }))
  end)
end)

describe(".npy memory maps", function()
  local dir
  H.temp_dir_each(function(d) dir = d end)

  it("give a CPU tensor with the file's values, in every layout the reader takes", function()
    for _, f in ipairs(FIXTURES) do
      local name = f[1]
      if not name:find("bigendian", 1, true) then
        local x = cs.load(FIX .. name, { mmap = true })
        assert.equal("cpu", x.device, name)
        assert.equal(f[2], x.dtype, name)
        assert.same(f[3], x:shape(), name)
        assert_values(f[4], x, name)
      end
    end
    assert.same({ 1, 3 }, cs.load(FIX .. "float64_fortran_3x4.npy", { mmap = true }):stride())
  end)

  it("are scanned in pieces with narrow, matching a scan of the whole, without holding the file in memory", function()
    local rows, cols = 64, 16384   -- 4 MiB of float32
    local whole = cs.rand({ rows, cols }, { seed = H.seed_for("mmap pieces"), device = "cpu" })
    cs.save(dir .. "/big.npy", whole)
    local before = cs.memory_info("cpu").in_use
    local m = cs.load(dir .. "/big.npy", { mmap = true })
    -- the map's pages belong to the file, not to cuscan's allocations
    assert.is_true(cs.memory_info("cpu").in_use - before < rows * cols * 4 / 2)
    local want = whole:cumsum(2)
    for r = 1, rows, 16 do
      local piece = m:narrow(1, r, 16)
      assert.equal(H.bits(want:narrow(1, r, 16)), H.bits(piece:cumsum(2)))
    end
    -- a scan along the other dim, carried across pieces of columns
    local carry = cs.zeros({ cols }, { dtype = "float64", device = "cpu" })
    local by_columns = whole:cumsum(1, { dtype = "float64" })
    for r = 1, rows, 16 do
      local part = m:narrow(1, r, 16):cumsum(1, { dtype = "float64" }) + carry
      assert.is_true(cs.allclose(part, by_columns:narrow(1, r, 16), { rtol = 1e-12 }))
      carry = part:select(1, 16)
    end
  end)

  it("are copy-on-write: writing into the tensor never changes the file", function()
    local path = dir .. "/cow.npy"
    cs.save(path, cs.arange(10, { dtype = "int32" }))
    local before = shell.slurp(path)
    local m = cs.load(path, { mmap = true })
    m:fill(-5)
    m:narrow(1, 1, 3):copy(cs.tensor({ 9, 9, 9 }, { dtype = "int32" }))
    m:cumsum(1, { out = m })
    assert.same({ 9, 18, 27, 22, 17, 12, 7, 2, -3, -8 }, m:totable())
    assert.equal(before, shell.slurp(path))
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 }, cs.load(path, { device = "cpu" }):totable())
  end)

  it("keep their pages after the file is removed, and views of them after the tensor is freed", function()
    local path = dir .. "/gone.npy"
    cs.save(path, cs.arange(1000, { dtype = "float64" }))
    local m = cs.load(path, { mmap = true })
    local v = m:narrow(1, 991, 10)
    os.remove(path)
    m:free()
    collectgarbage()
    assert.same({ 990, 991, 992, 993, 994, 995, 996, 997, 998, 999 }, v:totable())
  end)

  it("refuse big-endian data and a device other than the CPU, naming the file", function()
    H.raises(function() cs.load(FIX .. "int32_bigendian_5.npy", { mmap = true }) end,
             { "load: " .. FIX .. "int32_bigendian_5.npy: ", "big-endian" })
    H.raises(function() cs.load(FIX .. "int32_5.npy", { mmap = true, device = "cuda" }) end, { "load: ", "mmap" })
    H.raises(function() cs.load(FIX .. "int32_5.npy", { mmap = "yes" }) end, { "load: mmap: expected a boolean" })
  end)
end)

describe(".npy errors", function()
  local dir
  H.temp_dir_each(function(d) dir = d end)

  -- A .npy file with the given header dict (padded as NumPy pads it) and data bytes.
  local function npy_file(dict, data, version)
    version = version or 1
    local lb = version == 1 and 2 or 4
    local len = #dict + 1
    len = len + (64 - (6 + 2 + lb + len) % 64) % 64
    local le = {}
    for i = 1, lb do le[i] = string.char(math.floor(len / 256 ^ (i - 1)) % 256) end
    return "\147NUMPY" .. string.char(version, 0) .. table.concat(le) .. dict .. (" "):rep(len - #dict - 1) .. "\n" .. data
  end
  local function fits(descr, shape) return ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }"):format(descr, shape) end

  local MALFORMED = {
    { "bad magic", "NUMPY\1\0\0\0hello", { "not a .npy file", "bad magic" } },
    { "an empty file", "", { "bad magic" } },
    { "an unknown version", "\147NUMPY\9\0\10\0{}        ", { "version 9.0" } },
    { "a truncated header", npy_file(fits("<f4", "(3,)"), ("\0"):rep(12)):sub(1, 40), { "truncated header" } },
    { "truncated data", npy_file(fits("<f4", "(3,)"), ("\0"):rep(11)), { "truncated data", "need 12 bytes", "has 11" } },
    { "a header that claims more than the data", npy_file(fits("<f8", "(1000,)"), ("\0"):rep(24)),
      { "truncated data", "(1000)", "8000 bytes" } },
    { "a header that claims less than the data", npy_file(fits("<f8", "(2,)"), ("\0"):rep(24)),
      { "does not match the data", "16 bytes", "has 24" } },
    { "a shape that overflows int64", npy_file(fits("<f8", "(4294967296, 4294967296)"), ""), { "overflows" } },
    { "a 0-size shape whose other sizes overflow int64", npy_file(fits("<f4", "(0, 4294967296, 4294967296)"), ""),
      { "shape (0, 4294967296, 4294967296) overflows" } },
    { "a size too large to count", npy_file(fits("<f4", "(2305843009213693952123,)"), ""),
      { "shape (2305843009213693952123,) overflows" } },
    { "a size that overflows", npy_file(fits("<f4", "(99999999999999999999999,)"), ""), { "overflows" } },
    { "a negative size", npy_file(fits("<f4", "(-1,)"), ""), { "negative" } },
    { "a missing key", npy_file("{'descr': '<f4', 'shape': (1,), }", "\0\0\0\0"), { "malformed header" } },
    { "an extra key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }", "\0\0\0\0"),
      { "unexpected key 'x'" } },
    { "a fortran_order that is not a boolean", npy_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", "\0\0\0\0"),
      { "fortran_order" } },
    { "a header that is not a dict", npy_file("[1, 2]", ""), { "malformed header" } },
    { "an unterminated string", npy_file("{'descr: '<f4'}", ""), { "malformed header" } },
    { "a 4-byte header length past the end", "\147NUMPY\2\0\255\255\0\0{'descr'", { "truncated header" } },
    { "too many dims", npy_file(fits("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), "\0\0\0\0"), { "9 dims" } },
  }

  it("every malformed file is a cuscan: error naming the file and the problem", function()
    for i, case in ipairs(MALFORMED) do
      local path = ("%s/bad%d.npy"):format(dir, i)
      shell.spit(path, case[2])
      local ok, err = pcall(cs.load, path)
      assert.is_false(ok, case[1])
      assert.matches("^cuscan: load: " .. path:gsub("%p", "%%%0") .. ": ", err)
      for _, needle in ipairs(case[3]) do
        assert.is_truthy(err:find(needle, 1, true), case[1] .. ": " .. err .. " should mention " .. needle)
      end
      -- memory maps read the same header
      assert.is_false(pcall(cs.load, path, { mmap = true }), case[1])
    end
  end)

  it("an unsupported dtype is an error that names it", function()
    local path = dir .. "/raw4.npy"
    shell.spit(path, npy_file(fits("<V4", "(2,)"), "\0\0\0\0\0\0\0\0"))
    H.raises(function() cs.load(path) end, { "load: " .. path .. ": unsupported dtype '<V4': cuscan reads", "bfloat16 (<V2" })
    for name, needles in pairs({
      ["complex64_2.npy"] = { "'<c8'", "complex64" },
      ["object_2.npy"] = { "'|O'", "Python objects" },
      ["uint8_3.npy"] = { "'|u1'", "uint8" },
      ["structured_2.npy"] = { "structured dtype" },
    }) do
      H.raises(function() cs.load(FIX .. name) end, { "load: " .. FIX .. name .. ": unsupported dtype", needles[1], needles[2] })
    end
  end)

  it("a directory, a missing file and a file without read permission are errors naming them", function()
    os.execute("mkdir " .. shell.q(dir .. "/d.npy"))
    H.raises(function() cs.load(dir .. "/d.npy") end, { "load: " .. dir .. "/d.npy: cannot read: Is a directory" })
    H.raises(function() cs.load(dir .. "/none.npy") end, { "load: " .. dir .. "/none.npy: cannot open: No such file or directory" })
    H.raises(function() cs.load(dir .. "/d.npy", { mmap = true }) end, { "Is a directory" })
    -- root reads any file it made; a write-only kernel setting refuses root too
    local denied = "/proc/sys/vm/compact_memory"
    local p = io.open(denied, "rb")
    if p then p:close() pending("no file here refuses reading") return end
    H.raises(function() cs.load(denied, { format = "npy" }) end, { "load: " .. denied .. ": cannot open: Permission denied" })
  end)

  it("bad arguments name the argument", function()
    H.raises(function() cs.load(42) end, { "load: path: expected a file name, got number 42" })
    H.raises(function() cs.save(dir .. "/a\0b.npy", cs.zeros({ 1 })) end, { "save: path: ", "contains a NUL byte" })
    H.raises(function() cs.load(dir .. "/x.dat") end, { "load: path: cannot tell the format", "x.dat" })
    H.raises(function() cs.load(dir .. "/x.npy", { format = "xls" }) end, { "load: format: expected \"npy\", \"csv\" or \"txt\"" })
    H.raises(function() cs.load(dir .. "/x.npy", { header = true }) end, { "load: header: this option does not apply to .npy files" })
    H.raises(function() cs.load(dir .. "/x.npy", { devise = "cpu" }) end, { "load: opts: unknown option 'devise'" })
    H.raises(function() cs.load(dir .. "/x.npy", { device = "tpu" }) end, { "load: device: expected \"cpu\" or \"cuda\"" })
    H.raises(function() cs.save(dir .. "/x.npy", { 1, 2 }) end, { "save: x: expected a tensor" })
    H.raises(function() cs.save(dir .. "/x.npy", cs.zeros({ 1 }), { delimiter = "," }) end,
             { "save: delimiter: this option does not apply to .npy files" })
  end)
end)

describe("a failed save", function()
  local dir
  H.temp_dir_each(function(d) dir = d end)

  local function listing() return (H.shell("ls -A " .. H.quote(dir))) end

  it("names the file and leaves nothing under a temporary name", function()
    os.execute("mkdir " .. shell.q(dir .. "/taken.npy"))
    H.raises(function() cs.save(dir .. "/taken.npy", cs.zeros({ 3 })) end,
             { "save: " .. dir .. "/taken.npy: cannot replace it: Is a directory" })
    assert.equal("taken.npy\n", listing())
    H.raises(function() cs.save(dir .. "/no/such/dir.npy", cs.zeros({ 3 })) end,
             { "save: " .. dir .. "/no/such/dir.npy: cannot create a file in its directory: No such file or directory" })
    assert.equal("taken.npy\n", listing())
  end)

  it("that runs out of room mid-write leaves the old file whole and no partial one", function()
    local path = dir .. "/keep.npy"
    cs.save(path, cs.arange(5, { dtype = "int64" }))
    local old = shell.slurp(path)
    -- a file size limit makes the write fail with EFBIG (the signal it would raise is ignored)
    local chunk = ("local cs = require('cuscan'); cs.save(%q, cs.rand({1024, 1024}, {device = 'cpu'}))"):format(path)
    local out, status = H.shell(("cd %s && trap '' XFSZ && ulimit -f 256 && LUA_PATH=%s luajit -e %s"):format(
      H.quote(H.root), H.quote(H.root .. "/lua/?.lua;" .. H.root .. "/lua/?/init.lua;;"), H.quote(chunk)))
    assert.is_true(status ~= 0, out)
    assert.matches("cuscan: save: " .. path:gsub("%p", "%%%0") .. ": cannot write: File too large", out)
    assert.equal(old, shell.slurp(path))
    assert.equal("keep.npy\n", listing())
  end)

  it("in a directory without write permission is an error naming the file", function()
    local locked = dir .. "/locked"
    os.execute("mkdir " .. shell.q(locked) .. " && chmod 555 " .. shell.q(locked) .. " && chmod 755 " .. shell.q(dir))
    local chunk = ("local cs = require('cuscan'); local ok, e = pcall(cs.save, %q, cs.zeros({2})); print(e)"):format(locked .. "/x.npy")
    local env = ("LUA_PATH=%s"):format(H.quote(H.root .. "/lua/?.lua;" .. H.root .. "/lua/?/init.lua;;"))
    for _, v in ipairs({ "CUSCAN_LIB", "LD_PRELOAD", "ASAN_OPTIONS" }) do
      if os.getenv(v) then env = env .. " " .. v .. "=" .. H.quote(os.getenv(v)) end
    end
    local cmd = ("env %s luajit -e %s"):format(env, H.quote(chunk))
    local uid = H.shell("id -u"):gsub("%s+", "")
    if uid == "0" then
      -- root writes anywhere: run as nobody instead
      if H.shell("command -v runuser"):match("^%s*$") then pending("running as root without runuser") return end
      cmd = "runuser -u nobody -- " .. cmd
    end
    local out = H.shell("cd " .. H.quote(H.root) .. " && " .. cmd)
    assert.matches("cuscan: save: " .. (locked .. "/x.npy"):gsub("%p", "%%%0") .. ": cannot create a file in its directory: Permission denied", out)
    assert.equal("", (H.shell("ls -A " .. H.quote(locked))))
  end)
end)

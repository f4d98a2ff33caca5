-- float16 and bfloat16 in files (issue 14, items 1 and 2): .npy both ways bit for bit (float16 as
-- '<f2'; bfloat16 as '<V2', the 2-byte raw words NumPy saves ml_dtypes' bfloat16 arrays as, and any
-- 2-byte raw word read as bfloat16), memory maps, big-endian data, the fixture NumPy wrote, .csv;
-- and, with a python3 that has NumPy, files exchanged with NumPy itself: its float16 rounding of
-- random doubles against cuscan's, and bfloat16 words read as NumPy reads them.
local H = require("spec.helpers")
local cs = require("cuscan")
local shell = require("spec.support.shell")

local HALVES = { "float16", "bfloat16" }
local DESCR = { float16 = "'<f2'", bfloat16 = "'<V2'" }

-- The file's header with its descr replaced (same length), and its data bytes swapped in pairs
-- when swap: the file a big-endian machine, or another writer, would have made.
local function rewrite(path, from, to, swap)
  local s = shell.slurp(path)
  local start = s:find(from, 1, true)
  assert.is_truthy(start, from)
  local body = s:sub(1, start - 1) .. to .. s:sub(start + #to)
  if swap then
    local head = s:find("\n", 11, true)   -- the header ends the line; the data follows
    local data = s:sub(head + 1):gsub("(.)(.)", "%2%1")
    body = body:sub(1, head) .. data
  end
  shell.spit(path, body)
end

H.each_device("float16 and bfloat16 files", function(dev, it)
  local dir
  H.temp_dir_each(function(d) dir = d end)

  for _, dtype in ipairs(HALVES) do
    it(dtype .. ": .npy keeps every bit pattern, NaN payloads included, loaded or mapped", function()
      H.with_rng("half npy " .. dtype .. dev, function(rng)
        local x = H.from_half_bits(H.every_half_pattern(rng), dtype, dev):reshape({ 256, 256 }):transpose(1, 2)
        local path = dir .. "/x.npy"
        cs.save(path, x)
        assert.is_truthy(shell.slurp(path):find("'descr': " .. DESCR[dtype], 1, true))
        local y = cs.load(path, { device = dev })
        assert.equal(dtype, y.dtype)
        assert.equal(H.bits(x), H.bits(y))
        local m = cs.load(path, { mmap = true })
        assert.equal(dtype, m.dtype)
        assert.equal(H.bits(x), H.bits(m))
        -- the payload of a NaN that a sum produces is the arithmetic's choice (IEEE 754 does not fix
        -- which operand's it keeps), so the scans are compared value for value, signed zeros included
        assert.tensor_equal(x:cpu():cumsum(1), m:cumsum(1), { strict = true })
      end)
    end)
  end

  it("reads big-endian words and '|V2' as bfloat16, and the float16 file NumPy wrote", function()
    local x = cs.tensor({ 1, -2.5, 1 / 3, 65504, 2 ^ -24 }, { dtype = "float16", device = dev })
    local path = dir .. "/big.npy"
    cs.save(path, x)
    rewrite(path, "'<f2'", "'>f2'", true)
    assert.equal(H.bits(x), H.bits(cs.load(path, { device = dev })))
    local b = cs.tensor({ 1, -2.5, 1 / 3, 3e38 }, { dtype = "bfloat16", device = dev })
    cs.save(path, b)
    rewrite(path, "'<V2'", "'|V2'", false)
    assert.equal(H.bits(b), H.bits(cs.load(path, { device = dev })))
    local fix = cs.load(H.root .. "/spec/fixtures/numpy/float16_3.npy", { device = dev })
    assert.equal("float16", fix.dtype)
    assert.same({ 1, 2, 3 }, fix:totable())
  end)

  for _, dtype in ipairs(HALVES) do
    it(dtype .. ": .csv writes every value with the fewest digits that read back as it", function()
      H.with_rng("half csv " .. dtype .. dev, function(rng)
        local bits = {}
        for _, b in ipairs(H.every_half_pattern(rng)) do
          local v = H.half_value(b, dtype)
          if v == v then bits[#bits + 1] = b end
        end
        local x = H.from_half_bits(bits, dtype, dev)
        local path = dir .. "/all.csv"
        cs.save(path, x)
        assert.equal(H.bits(x), H.bits(cs.load(path, { dtype = dtype, device = dev })))
        -- each text one digit shorter rounds (in the library's conversion) to another value
        local texts, shorter, which = {}, {}, {}
        for line in shell.slurp(path):gmatch("([^\n]*)\n") do texts[#texts + 1] = line end
        assert.equal(#bits, #texts)
        for i, t in ipairs(texts) do
          local digits = #(t:gsub("e.*", ""):gsub("%D", ""):gsub("^0+", ""))
          if digits > 1 then
            shorter[#shorter + 1] = tonumber(string.format("%." .. (digits - 1) .. "g", tonumber(t)))
            which[#shorter] = { bits[i], t }
          end
        end
        local back = H.half_bits(cs.tensor(shorter, { dtype = dtype }))
        for i, b in ipairs(back) do
          if b == which[i][1] then
            error(("%s: %s has a shorter text (%.17g) that reads back as it"):format(dtype, which[i][2], shorter[i]))
          end
        end
        assert.is_true(#shorter > 1000)
      end)
    end)
  end
  it(".csv writes float16 and bfloat16 0.1 as 0.1", function()
    for _, dtype in ipairs(HALVES) do
      cs.save(dir .. "/p.csv", cs.tensor({ 0.1, -1e-3 }, { dtype = dtype, device = dev }))
      assert.equal("0.1\n-0.001\n", shell.slurp(dir .. "/p.csv"))
    end
  end)

  it(".csv keeps the values, written with digits that read back as the same value", function()
    for _, dtype in ipairs(HALVES) do
      local x = cs.tensor({ { 1 / 3, -0.1, 0 / 0 }, { math.huge, 2 ^ -20, 1000.5 } }, { dtype = dtype, device = dev })
      cs.save(dir .. "/x.csv", x)
      local y = cs.load(dir .. "/x.csv", { dtype = dtype, device = dev })
      assert.equal(dtype, y.dtype)
      assert.equal(H.bits(x), H.bits(y))
    end
  end)
end)

-- NumPy's float16 of doubles.npy, NumPy's float64 of our float16 and bfloat16 files (bfloat16 as
-- the top half of a float32, as ml_dtypes defines it), and a bfloat16 file of raw words from NumPy.
local SCRIPT = [[
import os, sys
import numpy as np
d = sys.argv[1]
np.save(os.path.join(d, "numpy_f16.npy"), np.load(os.path.join(d, "doubles.npy")).astype(np.float16))
np.save(os.path.join(d, "ours_f16_as_f64.npy"), np.load(os.path.join(d, "ours_f16.npy")).astype(np.float64))
words = np.load(os.path.join(d, "ours_bf16.npy"))
assert words.dtype.kind == "V" and words.dtype.itemsize == 2
top = words.view("<u2").astype("<u4") << 16
np.save(os.path.join(d, "ours_bf16_as_f64.npy"), top.view("<f4").astype(np.float64))
np.save(os.path.join(d, "numpy_bf16.npy"), np.arange(65536, dtype="<u2").view("V2"))
]]

describe("float16 and bfloat16 files exchanged with NumPy", function()
  local py = H.numpy_python()
  local it_numpy = it
  if not py then
    it_numpy = function(name) pending(name .. " (python3-numpy is not installed: apt-get install python3-numpy)") end
  end

  it_numpy("NumPy rounds doubles to float16 as cuscan does, and reads cuscan's float16 and bfloat16 files", function()
    local dir = shell.tmpdir()
    H.with_rng("half numpy", function(rng)
      -- doubles at, beside and between the midpoints of neighbouring float16 values, and spread widely
      local v = {}
      for _ = 1, 20000 do
        local b = rng:int(0, 0x7bfe)
        local mid = (H.half_value(b, "float16") + H.half_value(b + 1, "float16")) / 2
        v[#v + 1] = rng:pick({ mid, mid * (1 + 2 ^ -52), mid * (1 - 2 ^ -52), -mid })
        v[#v + 1] = rng:uniform(-1, 1) * 2 ^ rng:int(-30, 20)
      end
      local doubles = cs.tensor(v, { dtype = "float64", device = "cpu" })
      cs.save(dir .. "/doubles.npy", doubles)
      local ours16 = doubles:to("float16")
      cs.save(dir .. "/ours_f16.npy", ours16)
      local all = {}
      for b = 0, 0xffff do all[b + 1] = b end
      local ours_bf = H.from_half_bits(all, "bfloat16", "cpu")
      cs.save(dir .. "/ours_bf16.npy", ours_bf)
      shell.spit(dir .. "/exchange.py", SCRIPT)
      local out, status = H.shell(("%s %s %s"):format(py, H.quote(dir .. "/exchange.py"), H.quote(dir)))
      assert.equal(0, status, out)
      assert.equal(H.bits(cs.load(dir .. "/numpy_f16.npy", { device = "cpu" })), H.bits(ours16), "NumPy's float16 rounding")
      assert.equal(H.bits(ours16:to("float64")), H.bits(cs.load(dir .. "/ours_f16_as_f64.npy", { device = "cpu" })))
      local theirs = cs.load(dir .. "/ours_bf16_as_f64.npy", { device = "cpu" })
      assert.tensor_equal(ours_bf:to("float64"), theirs, { strict = true })
      assert.equal(H.bits(ours_bf), H.bits(cs.load(dir .. "/numpy_bf16.npy", { device = "cpu" })))
    end)
    os.execute("rm -rf " .. shell.q(dir))
  end)
end)

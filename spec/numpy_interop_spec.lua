-- Files exchanged with NumPy itself, both ways, on fresh random data: NumPy reads what cuscan
-- writes (.npy and .csv) to the same bytes, and cuscan reads what NumPy writes in every variant
-- (C and Fortran order, big-endian, format 1.0, 2.0 and 3.0, savetxt). Needs a python3 with NumPy
-- (Debian's python3-numpy, which .ci/run installs); pending with the reason without one.
local H = require("spec.helpers")
local cs = require("cuscan")
local shell = require("spec.support.shell")

local PY = H.numpy_python()

-- For each in_K.npy: the array's bytes in C order, little-endian (raw_K.bin), and the array again
-- in Fortran order, big-endian and format versions 2.0 and 3.0. Then the text files both ways.
local SCRIPT = [[
import glob, os, sys
import numpy as np
from numpy.lib import format as npf
d = sys.argv[1]
for path in sorted(glob.glob(os.path.join(d, "in_*.npy"))):
    k = os.path.basename(path)[3:-4]
    a = np.load(path)
    little = a.astype(a.dtype.newbyteorder("<"))
    with open(os.path.join(d, "raw_%s.bin" % k), "wb") as f:
        f.write(np.ascontiguousarray(little).tobytes())
    np.save(os.path.join(d, "fortran_%s.npy" % k), np.asfortranarray(a) if a.ndim else a)
    if a.dtype.itemsize > 1:
        np.save(os.path.join(d, "big_%s.npy" % k), a.astype(a.dtype.newbyteorder(">")))
    for v in (2, 3):
        with open(os.path.join(d, "v%d_%s.npy" % (v, k)), "wb") as f:
            npf.write_array(f, a, version=(v, 0))
np.save(os.path.join(d, "csv_by_numpy.npy"), np.loadtxt(os.path.join(d, "ours.csv"), delimiter=","))
np.save(os.path.join(d, "txt_by_numpy.npy"), np.loadtxt(os.path.join(d, "ours.txt")))
rng = np.random.default_rng(int(sys.argv[2]))
r = rng.standard_normal((7, 5)) * 10.0 ** rng.integers(-300, 300, (7, 5))
np.savetxt(os.path.join(d, "theirs.csv"), r, delimiter=",", fmt="%.17g")
np.save(os.path.join(d, "theirs_truth.npy"), r)
]]

local function random_tensor(rng, dtype, shape)
  local n = H.numel(shape)
  local x
  if dtype == "bool" then x = cs.rand({ n }, { seed = rng:next(), device = "cpu" }):lt(0.5)
  elseif dtype == "float32" or dtype == "float64" then
    local flat = {}
    for i = 1, n do flat[i] = rng:any_double() end
    x = cs.tensor(flat, { dtype = "float64", device = "cpu" }):to(dtype)
  else
    x = (cs.rand({ n }, { seed = rng:next(), dtype = "float64", device = "cpu" }) * 2 ^ 31 - 2 ^ 30):to(dtype)
  end
  if #shape == 0 then return x:reshape({}) end
  return x:reshape(shape)
end

describe("files exchanged with NumPy", function()
  local it_numpy = it
  if not PY then
    it_numpy = function(name) pending(name .. " (python3-numpy is not installed: apt-get install python3-numpy)") end
  end

  it_numpy("NumPy reads every .npy and .csv cuscan writes, and cuscan every variant NumPy writes, bit for bit", function()
    local dir = shell.tmpdir()
    H.with_rng("numpy interop", function(rng, seed)
      local shapes = { {}, { 0 }, { 5 }, { 3, 4 }, { 2, 0, 3 }, { 2, 3, 1, 4 } }
      local made = {}
      for _, dtype in ipairs(cs.dtypes) do
        for _, shape in ipairs(shapes) do
          local x = random_tensor(rng, dtype, shape)
          if #shape >= 2 and rng:bool() then x = x:transpose(1, 2) end
          local k = #made + 1
          made[k] = x
          cs.save(("%s/in_%d.npy"):format(dir, k), x)
        end
      end
      local grid = random_tensor(rng, "float64", { 9, 4 })
      cs.save(dir .. "/ours.csv", grid)
      cs.save(dir .. "/ours.txt", grid)
      shell.spit(dir .. "/exchange.py", SCRIPT)
      local out, status = H.shell(("%s %s %s %d"):format(PY, H.quote(dir .. "/exchange.py"), H.quote(dir), seed))
      assert.equal(0, status, out)
      for k, x in ipairs(made) do
        local what = ("%s %s"):format(x.dtype, table.concat(x:shape(), "x"))
        assert.equal(H.bits(x), shell.slurp(("%s/raw_%d.bin"):format(dir, k)), "NumPy reading ours: " .. what)
        for _, variant in ipairs({ "fortran", "big", "v2", "v3" }) do
          local path = ("%s/%s_%d.npy"):format(dir, variant, k)
          if shell.slurp(path) then
            for _, mmap in ipairs({ false, variant ~= "big" }) do
              local y = cs.load(path, { device = "cpu", mmap = mmap })
              assert.equal(x.dtype, y.dtype, variant .. " " .. what)
              assert.same(x:shape(), y:shape(), variant .. " " .. what)
              assert.equal(H.bits(x), H.bits(y), variant .. " " .. what)
            end
          end
        end
      end
      assert.equal(H.bits(grid), H.bits(cs.load(dir .. "/csv_by_numpy.npy", { device = "cpu" })), "NumPy's loadtxt of our .csv")
      assert.equal(H.bits(grid), H.bits(cs.load(dir .. "/txt_by_numpy.npy", { device = "cpu" })), "NumPy's loadtxt of our .txt")
      local theirs = cs.load(dir .. "/theirs.csv", { device = "cpu" })
      assert.equal(H.bits(cs.load(dir .. "/theirs_truth.npy", { device = "cpu" })), H.bits(theirs), "our load of NumPy's savetxt")
    end)
    os.execute("rm -rf " .. shell.q(dir))
  end)
end)

-- Transposed copies on the CPU (src/cpu/ops.c, transpose.c): an input whose unit stride runs across
-- the output's is copied through transposing blocks, with streaming stores once the output is
-- larger than the caches (more than 32 MiB always is). Checked on poisoned outputs against the
-- same values through an element-wise op (x * 1, x + 0: the per-element walk, no transposing
-- blocks) and, at random places, against plain Lua reads of the input; odd sizes (edges of the
-- blocks), 4- and 8-byte and other elements, narrowed views.
local cs = require("cuscan")
local H = require("spec.helpers")
require("cuscan.assertions")

local function poison(y)
  if y.dtype == "float32" or y.dtype == "float64" then y:fill(0 / 0) else y:fill(-7) end
end

local function check(rng, x, out_shape)
  local y = cs.empty(out_shape or x:shape(), { dtype = x.dtype, device = "cpu" })
  poison(y)
  y:copy(x)
  if x.dtype == "bool" then
    assert.tensor_equal(x:to("int32"), y:to("int32"), { strict = true })
  else
    local float = x.dtype == "float32" or x.dtype == "float64"
    assert.tensor_equal(float and x * 1 or x + 0, y, { strict = true })
  end
  local rows, cols = x:shape()[1], x:shape()[2]
  for _ = 1, 40 do
    local i, j = rng:int(1, rows), rng:int(1, cols)
    assert.equal(x:select(1, i):select(1, j):item(), y:select(1, i):select(1, j):item())
  end
end

describe("transposed copies on the CPU", function()
  it("of odd sizes and every element size, bit for bit", function()
    H.with_rng("transposed copies small", function(rng)
      for _, dtype in ipairs({ "float32", "float64", "int32", "int64", "bool" }) do
        local a, b = rng:int(64, 300), rng:int(64, 300)
        local x = cs.rand({ b, a }, { seed = rng:next(), device = "cpu" }) * 200 - 100
        x = (dtype == "bool" and x:lt(0) or x:to(dtype)):transpose(1, 2)
        check(rng, x)
      end
    end)
  end)

  it("larger than the caches, streaming, bit for bit, into views too", function()
    H.with_rng("transposed copies large", function(rng)
      for _, dtype in ipairs({ "float32", "int32", "float64" }) do
        local n = dtype == "float64" and 2053 or 4099
        local x = (cs.rand({ n + 2, n }, { seed = rng:next(), device = "cpu" }) * 1000):to(dtype):transpose(1, 2)
        check(rng, x)
        -- into a narrowed view: rows that start off the alignment of streaming stores
        local y = cs.empty({ n, n + 5 }, { dtype = dtype, device = "cpu" })
        poison(y)
        local v = y:narrow(2, 2, n + 2)
        v:copy(x)
        assert.tensor_equal(dtype == "int32" and x + 0 or x * 1, v, { strict = true })
      end
    end)
  end)
end)

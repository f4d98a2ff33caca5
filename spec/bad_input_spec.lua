-- Every misuse is a `cuscan:` error that names the argument and what was expected, points at the
-- caller's line, changes none of the user's tensors and loses no memory (1000 failing calls
-- leave cs.memory_info() where it was). Issue 2's error list and issue 5's bad-input list.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local nan = 0 / 0

local raises = H.raises

-- The tensors a case may use, on device dev.
local function context(dev)
  local c = {}
  c.x = cs.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { device = dev })
  c.m = c.x:gt(2)
  c.mask_t = c.m:transpose(1, 2):contiguous()
  c.out_shape = cs.full({ 3, 2 }, nan, { device = dev })
  c.out_dtype = cs.full({ 2, 3 }, nan, { dtype = "float64", device = dev })
  c.out_int = cs.full({ 2, 3 }, -7, { dtype = "int32", device = dev })
  c.base = cs.tensor({ 1, 2, 3, 4, 5, 6, 7 }, { device = dev })
  c.part_x = c.base:narrow(1, 1, 6)
  c.part_out = c.base:narrow(1, 2, 6)
  c.mbase = cs.tensor({ true, false, true, true, false, true, true }, { device = dev })
  c.freed = cs.tensor({ 1, 2, 3 }, { device = dev })
  c.freed:free()
  c.keep = { "x", "m", "mask_t", "out_shape", "out_dtype", "out_int", "base", "mbase" }
  return c
end

local CASES = {
  { "dim 0", function(c) local _ = c.x:cumsum(0) end, { "cumsum: dim: 0 is out of range", "1-based" } },
  { "dim > ndim", function(c) local _ = c.x:cumsum(3) end, { "dim: 3 is out of range for a tensor of 2 dims" } },
  { "dim < -ndim", function(c) local _ = c.x:cumprod(-3) end, { "cumprod: dim: -3 is out of range" } },
  { "a non-integer dim", function(c) local _ = c.x:cumsum(1.5) end, { "dim: expected an integer", "1.5" } },
  { "a string dim", function(c) local _ = cs.cumsum(c.x, "1") end, { "dim: expected an integer", "string" } },
  { "a missing dim", function(c) local _ = cs.cumprod(c.x) end, { "dim: expected an integer", "nil" } },
  { "a nil tensor", function() local _ = cs.cumsum(nil, 1) end, { "cumsum: x: expected a tensor, got nil" } },
  { "a table where a tensor is expected", function() local _ = cs.cumprod({ 1, 2, 3 }, 1) end, { "cumprod: x: expected a tensor, got a table" } },
  { "a mask of another shape", function(c) local _ = c.x:cumsum(1, { mask = c.mask_t }) end, { "mask: expected x's shape 2x3, got 3x2" } },
  { "a mask of another dtype", function(c) local _ = c.x:cumsum(2, { mask = c.x }) end, { "mask: expected a bool tensor, got float32" } },
  { "a mask that is not a tensor", function(c) local _ = c.x:cumsum(2, { mask = { true, false } }) end, { "mask: expected a bool tensor, got a table" } },
  { "masked_cumsum without a mask", function(c) local _ = c.x:masked_cumsum(nil, 2) end, { "masked_cumsum: mask: expected a bool tensor" } },
  { "an out of another shape", function(c) local _ = c.x:cumsum(1, { out = c.out_shape }) end, { "out: expected x's shape 2x3, got 3x2" } },
  { "an out of another dtype", function(c) local _ = c.x:cumsum(1, { out = c.out_dtype }) end, { "out: expected dtype float32", "got float64" } },
  { "an out of an integer dtype", function(c) local _ = c.x:cumprod(1, { out = c.out_int }) end, { "out: expected dtype float32", "int32" } },
  { "an out that is not a tensor", function(c) local _ = c.x:cumsum(1, { out = 5 }) end, { "out: expected a tensor, got number 5" } },
  { "an out that partially overlaps the input", function(c) local _ = c.part_x:cumsum(1, { out = c.part_out }) end, { "out: overlaps x partially" } },
  { "an out overlapping x, with a mask", function(c) local _ = c.part_x:cumsum(1, { mask = c.mbase:narrow(1, 1, 6), out = c.part_out }) end, { "out: overlaps x partially" } },
  { "cumprod of bool", function(c) local _ = c.m:cumprod(1) end, { "cumprod: x: bool tensors are not supported" } },
  { "an unsupported accumulation dtype", function(c) local _ = c.x:cumsum(1, { dtype = "int32" }) end, { "dtype: a float32 input cannot accumulate into int32" } },
  { "a narrowing accumulation dtype", function(c) local _ = c.out_dtype:cumsum(1, { dtype = "float32" }) end, { "dtype: a float64 input cannot accumulate into float32" } },
  { "an unknown dtype name", function(c) local _ = c.x:cumsum(1, { dtype = "complex64" }) end, { "dtype: expected a dtype", "complex64" } },
  { "a misspelt option", function(c) local _ = c.x:cumsum(1, { revese = true }) end, { "unknown option 'revese'" } },
  { "a non-boolean reverse", function(c) local _ = c.x:cumsum(1, { reverse = 1 }) end, { "reverse: expected a boolean, got number 1" } },
  { "a non-boolean exclusive", function(c) local _ = c.x:cumprod(1, { exclusive = "yes" }) end, { "exclusive: expected a boolean" } },
  { "opts that are not a table", function(c) local _ = c.x:cumsum(1, true) end, { "opts: expected a table of options" } },
  { "ragged tables", function(dev) local _ = cs.tensor({ { 1, 2, 3 }, { 4, 5 } }, { device = dev }) end, { "tensor: ragged table at [2]: expected 3 elements, got 2" } },
  { "ragged deeper", function(dev) local _ = cs.tensor({ { 1, 2 }, { 3, { 4 } } }, { device = dev }) end, { "ragged table at [2][2]" } },
  { "non-numeric tables", function(dev) local _ = cs.tensor({ { 1, "a" } }, { device = dev }) end, { "[1][2]: expected a number or boolean, got string" } },
  { "tables mixing booleans and numbers", function(dev) local _ = cs.tensor({ true, 1 }, { device = dev }) end, { "[2]" } },
  { "negative shape entries", function(dev) local _ = cs.zeros({ 2, -3 }, { device = dev }) end, { "zeros: shape[2]: expected a non-negative integer size, got number -3" } },
  { "fractional shape entries", function(dev) local _ = cs.ones({ 2.5 }, { device = dev }) end, { "ones: shape[1]", "2.5" } },
  { "a shape that is not a table", function(dev) local _ = cs.rand(5, { device = dev }) end, { "rand: shape: expected a table of sizes" } },
  { "more than 8 dims", function(dev) local _ = cs.zeros({ 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { device = dev }) end, { "shape: 9 dims given, at most 8" } },
  { "an element count that overflows int64", function(dev) local _ = cs.zeros({ 2 ^ 32, 2 ^ 32 }, { device = dev }) end, { "more elements than int64 can count" } },
  { "an element count just past int64", function(dev) local _ = cs.full({ 2 ^ 62, 2 }, 1, { device = dev }) end, { "more elements than int64 can count" } },
  { "reshape to a different count", function(c) local _ = c.x:reshape({ 4, 2 }) end, { "reshape: shape: {4, 2} holds 8 elements, x has 6" } },
  { "reading an element out of range (select)", function(c) local _ = c.x:select(1, 3) end, { "select: index: 3 is out of range for dim 1 of size 2" } },
  { "reading an element out of range (select 0)", function(c) local _ = c.x:select(2, 0) end, { "select: index: 0 is out of range" } },
  { "reading past the end (narrow)", function(c) local _ = c.x:narrow(2, 2, 3) end, { "narrow: length" } },
  { "item of several elements", function(c) local _ = c.x:item() end, { "item: x: expected a tensor of one element, got 6" } },
  { "size of a dim out of range", function(c) local _ = c.x:size(3) end, { "size: dim: 3 is out of range" } },
  { "using a tensor after free (scan)", function(c) local _ = c.freed:cumsum(1) end, { "cumsum: x: tensor was freed" } },
  { "using a tensor after free (totable)", function(c) local _ = c.freed:totable() end, { "tensor was freed" } },
  { "using a tensor after free (as a mask)", function(c) local _ = c.x:cumsum(1, { mask = c.freed }) end, { "mask: tensor was freed" } },
  { "using a tensor after free (arithmetic)", function(c) local _ = c.freed + 1 end, { "add: a: tensor was freed" } },
  { "using a tensor after free (shape)", function(c) local _ = c.freed:shape() end, { "shape: x: tensor was freed" } },
  { "an unknown device name", function() local _ = cs.zeros({ 2 }, { device = "gpu" }) end, { "device: expected \"cpu\" or \"cuda\", got string \"gpu\"" } },
  { "an unknown constructor option", function(dev) local _ = cs.ones({ 2 }, { device = dev, dtpye = "int32" }) end, { "unknown option 'dtpye'" } },
  { "shapes that do not broadcast", function(c) local _ = c.x + c.mask_t end, { "add: shapes 2x3 and 3x2 cannot be broadcast" } },
  { "a string operand", function(c) local _ = c.x * "2" end, { "mul: b: expected a tensor or a number, got string" } },
  { "a number first and a string", function(c) local _ = {} - c.x end, { "sub: a: expected a tensor or a number, got a table" } },
  { "pow of an integer tensor to a negative power", function(c) local _ = c.out_int:pow(-2) end, { "pow: p: integer tensors cannot be raised to a negative integer power" } },
  { "negating a bool tensor", function(c) local _ = -c.m end, { "neg: x: bool tensors are not supported" } },
  { "cat of mismatched shapes", function(c) local _ = cs.cat({ c.x, c.mask_t }, 1) end, { "cat: list[2]: shape 3x2 does not match" } },
  { "max of an empty tensor", function(dev) local _ = cs.zeros({ 0 }, { device = dev }):max() end, { "max" } },
  { "rand of an integer dtype", function(dev) local _ = cs.rand({ 2 }, { dtype = "int32", device = dev }) end, { "rand: dtype: expected a float dtype (float32, float64, float16 or bfloat16), got int32" } },
  { "a negative seed", function(dev) local _ = cs.rand({ 2 }, { seed = -1, device = dev }) end, { "rand: seed: expected a non-negative integer" } },
  { "copy of another shape", function(c) local _ = c.out_shape:copy(c.x) end, { "copy: y: shape 2x3 does not broadcast to x's shape 3x2" } },
  { "fill with a string", function(c) local _ = c.out_int:fill("1") end, { "fill: value: expected a number or boolean" } },
  { "allclose with a misspelt option", function(c) local _ = cs.allclose(c.x, c.x, { rtl = 1 }) end, { "allclose: opts: unknown option 'rtl'" } },
  { "transpose with a bad dim", function(c) local _ = c.x:transpose(1, 3) end, { "transpose: d2: 3 is out of range" } },
  { "setting a field", function(c) c.x.dtype = "int32" end, { "cannot set field" } },
}

local function snapshot(c)
  local s = {}
  for _, k in ipairs(c.keep) do s[k] = H.bits(c[k]) end
  return s
end

H.each_device("bad input", function(dev, it)
  for _, case in ipairs(CASES) do
    local name, call, needles = case[1], case[2], case[3]
    it(name .. " is an error naming the argument; nothing changes, nothing leaks", function()
      local c = context(dev)
      -- a case's closure takes the device (constructors) or the context (everything else)
      local arg = debug.getlocal(call, 1) == "dev" and dev or c
      local before = snapshot(c)
      local ok, err = pcall(call, arg)
      assert.is_false(ok, "expected an error")
      err = tostring(err)
      local info = debug.getinfo(call, "S")
      local prefix = ("%s:%d: cuscan: "):format(info.short_src, info.linedefined)
      assert.equal(prefix, err:sub(1, #prefix))
      for _, needle in ipairs(needles) do
        assert.is_truthy(err:find(needle, 1, true), ("the error should mention %q: %q"):format(needle, err))
      end
      assert.same(before, snapshot(c))
      -- a thousand failing calls lose no memory
      collectgarbage()
      collectgarbage()
      local mem0 = cs.memory_info(dev).in_use
      for _ = 1, 1000 do pcall(call, arg) end
      collectgarbage()
      collectgarbage()
      assert.equal(mem0, cs.memory_info(dev).in_use)
      assert.same(before, snapshot(c))
    end)
  end
end)

describe("errors point at the caller's line", function()
  local x = cs.tensor({ 1, 2, 3 }, { device = "cpu" })

  it("from methods, functions and metamethods", function()
    raises(function() local _ = x:cumsum(2) end, { "cumsum: dim" })
    raises(function() local _ = cs.cumsum(x, 2) end, { "cumsum: dim" })
    raises(function() local _ = x + "s" end, { "add: b" })
    raises(function() local _ = 2 / x:gt(1):logical_and(5) end, { "logical_and: b" })
    raises(function() local _ = -cs.tensor({ true }) end, { "neg" })
    raises(function() local _ = x:reverse_cumsum(5) end, { "reverse_cumsum: dim" })
    raises(function() local _ = x:masked_cumsum(x:gt(1), 4) end, { "masked_cumsum: dim" })
  end)

  it("through the user's own helper functions: the line inside the helper", function()
    local function helper(t) local y = t:cumprod(0) return y end
    local ok, err = pcall(helper, x)
    assert.is_false(ok)
    local line = debug.getinfo(helper, "S").linedefined
    assert.matches(":" .. line .. ": cuscan: cumprod: dim", err, 1, true)
  end)

  it("from inside a coroutine", function()
    local co = coroutine.create(function() local _ = x:cumsum(9) end)
    local ok, err = coroutine.resume(co)
    assert.is_false(ok)
    assert.matches("bad_input_spec.lua:%d+: cuscan: cumsum: dim: 9", err)
  end)

  it("C failures come back with the cuscan: prefix and C's message", function()
    local err = raises(function() local _ = cs.zeros({ 2 ^ 52 }, { dtype = "float64", device = "cpu" }) end, { "out of memory" })
    assert.matches(("asked for %.0f bytes"):format(2 ^ 55), err, 1, true)
  end)
end)

H.each_device("bad input across devices", function(dev, it)
  local cuda_it = H.cuda_it()
  local other = dev == "cpu" and "cuda" or "cpu"
  cuda_it("a mask on another device is an error naming mask #cuda", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    local m = cs.tensor({ true, false, true }, { device = other })
    raises(function() local _ = x:cumsum(1, { mask = m }) end, { "mask: expected a tensor on x's device" })
    assert.same({ 1, 2, 3 }, x:totable())
  end)
  cuda_it("an out on another device is an error naming out #cuda", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    local o = cs.full({ 3 }, -1, { device = other })
    raises(function() local _ = x:cumsum(1, { out = o }) end, { "out: expected a tensor on x's device" })
    assert.same({ -1, -1, -1 }, o:totable())
  end)
  cuda_it("element-wise ops between devices are errors #cuda", function()
    local x = cs.tensor({ 1, 2, 3 }, { device = dev })
    local y = cs.tensor({ 1, 2, 3 }, { device = other })
    raises(function() local _ = x + y end, { "add: tensors are on different devices" })
    raises(function() local _ = x:lt(y) end, { "lt: tensors are on different devices" })
    raises(function() local _ = cs.cat({ x, y }, 1) end, { "cat: list[2]: expected a tensor on" })
  end)
  it("asking for CUDA without a device is an error giving the reason", function()
    if cs.cuda_available() then
      pending("a CUDA device is present here")
      return
    end
    local reason = cs.cuda_unavailable_reason()
    assert.is_true(#reason > 0)
    raises(function() local _ = cs.zeros({ 2 }, { device = "cuda" }) end, { "device: CUDA is not available", reason })
    raises(function() cs.set_default_device("cuda") end, { "CUDA is not available", reason })
    raises(function() local _ = cs.tensor({ 1 }):cuda() end, { "CUDA is not available", reason })
    raises(function() local _ = cs.memory_info("cuda") end, { "CUDA is not available" })
    assert.equal("cpu", cs.default_device())
  end)
end)

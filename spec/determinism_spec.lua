-- Results are bit-identical across runs on one device, shape, layout and dtype (long lines split
-- across blocks included); scans in separate coroutines and back-to-back launches give what
-- serial runs give.
local H = require("spec.helpers")
local cs = require("cuscan")
require("cuscan.assertions")

local CASES = {
  { "one long line", { 1, 2 ^ 20 }, 2 },
  { "long columns", { 2 ^ 16, 16 }, 1 },
  { "rows", { 512, 1000 }, 2 },
  { "the middle dim", { 8, 4099, 7 }, 2 },
}

H.each_device("determinism", function(dev, it)
  for _, case in ipairs(CASES) do
    for _, dtype in ipairs({ "float32", "float64" }) do
      for _, layout in ipairs({ "contiguous", "transposed" }) do
        local name = ("%s %s %s: the same bits on every run"):format(case[1], dtype, layout)
        it(name, function()
          local seed = H.seed_for(name .. dev)
          H.replay(seed, name, function()
            local x = cs.rand(case[2], { seed = seed, device = dev, dtype = dtype }) - 0.5
            local dim = case[3]
            if layout == "transposed" then
              local last = #case[2]
              x = x:transpose(1, last):contiguous():transpose(1, last)
            end
            local m = cs.rand(case[2], { seed = seed + 1, device = dev }):lt(0.7)
            local opts = { reverse = true, mask = m }
            local first = H.bits(x:cumsum(dim, opts))
            local firstp = H.bits((x * 0.01 + 1):cumprod(dim))
            for _ = 1, 3 do
              assert.is_true(first == H.bits(x:cumsum(dim, opts)), "cumsum bits changed between runs")
              assert.is_true(firstp == H.bits((x * 0.01 + 1):cumprod(dim)), "cumprod bits changed between runs")
            end
          end)
        end)
      end
    end
  end
end)

H.each_device("concurrency", function(dev, it)
  it("scans in separate coroutines give the serial results", function()
    local inputs, serial = {}, {}
    for i = 1, 6 do
      inputs[i] = cs.rand({ 300 + i, 257 }, { seed = 100 + i, device = dev })
      serial[i] = H.bits(inputs[i]:cumsum(i % 2 + 1, { exclusive = i % 3 == 0 }))
    end
    local results = {}
    local cos = {}
    for i = 1, 6 do
      cos[i] = coroutine.create(function()
        local x = inputs[i]
        coroutine.yield()
        local y = x:cumsum(i % 2 + 1, { exclusive = i % 3 == 0 })
        coroutine.yield()
        results[i] = H.bits(y)
      end)
    end
    for _ = 1, 3 do
      for i = 6, 1, -1 do
        if coroutine.status(cos[i]) ~= "dead" then assert.is_true(coroutine.resume(cos[i])) end
      end
    end
    for i = 1, 6 do assert.is_true(serial[i] == results[i], "coroutine " .. i) end
  end)

  it("back-to-back launches without waiting give the serial results", function()
    local x = cs.rand({ 1024, 513 }, { seed = 77, device = dev })
    local outs = {}
    for i = 1, 20 do outs[i] = x:cumsum(i % 2 + 1, { reverse = i % 4 < 2 }) end
    local also = {}
    for i = 1, 20 do
      local y = x:cumsum(i % 2 + 1, { reverse = i % 4 < 2 })
      cs.synchronize()
      also[i] = H.bits(y)
    end
    for i = 1, 20 do assert.is_true(also[i] == H.bits(outs[i]), "launch " .. i) end
  end)

  it("chained scans queued together read the previous result", function()
    local x = cs.tensor({ 1, 2, 3, 4 }, { device = dev, dtype = "float64" })
    local y = x:cumsum(1):cumsum(1):cumprod(1, { exclusive = true })
    assert.tensor_equal({ 1, 1, 4, 40 }, y)
  end)
end)

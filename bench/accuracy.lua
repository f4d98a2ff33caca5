-- bench/accuracy.lua - float32 scans against a float64 reference at 2^20, 2^24 and 2^28 elements (the
-- figures in README's contract section): cumsum of U[0, 1), cumprod of U[0.999, 1.001), one line,
-- on the default device. Prints the largest relative error of each, and the largest in units of
-- the float32 output's own rounding (0.5 means every output is the correctly rounded prefix).
--   luajit bench/accuracy.lua [--max-log2 N]
local cs = require("cuscan")
local max_log2 = tonumber(arg[2]) or 28
print(("float32 scans against float64 on %s, %s"):format(cs.default_device(), os.date("!%Y-%m-%d")))
for _, k in ipairs({ 20, 24, 28 }) do
  if k <= max_log2 then
    local n = 2 ^ k
    for _, op in ipairs({ "cumsum", "cumprod" }) do
      local x = cs.rand({ n }, { seed = k })
      if op == "cumprod" then x = x * 0.002 + 0.999 end
      local got = x[op](x, 1):to("float64")
      local ref = x:to("float64")[op](x:to("float64"), 1)
      local rel = ((got - ref):abs() / ref:abs()):max()
      -- half an ulp of the float32 output at its magnitude: |ref| * 2^-24 is within a factor of 2
      local ulps = ((got - ref):abs() / (ref:abs() * 2 ^ -23)):max()
      print(("  2^%d %-8s max relative error %.2e (%.2f float32 ulp)"):format(k, op, rel, ulps))
      x, got, ref = nil, nil, nil
      collectgarbage()
    end
  end
end

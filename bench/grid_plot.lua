-- bench/grid_plot.lua - heat maps of a shape grid (`make bench-plot` after `make bench GRID=1`): one
-- PNG per dtype and mask, L down and inner across, each cell the scan's share of the copy's
-- bandwidth, drawn by gnuplot (the command in $GNUPLOT, default gnuplot).
--   luajit bench/grid_plot.lua GRID.csv PREFIX      writes PREFIX-float32.png, PREFIX-float64-masked.png, ...
local csv_path, prefix = arg[1], arg[2]
if not csv_path or not prefix then
  io.stderr:write("usage: grid_plot.lua GRID.csv PREFIX\n")
  os.exit(2)
end
local gnuplot = os.getenv("GNUPLOT") or "gnuplot"
if os.execute("command -v " .. gnuplot .. " >/dev/null 2>&1") ~= 0 then
  io.stderr:write("grid_plot: " .. gnuplot .. " is not installed (Debian's gnuplot-nox); the numbers are in " .. csv_path .. "\n")
  os.exit(0)
end

-- cells by (dtype, masked): L -> inner -> fraction
local maps, device, date = {}, "", ""
local f = assert(io.open(csv_path, "r"))
local header = f:read("*l")
local col = {}
local i = 0
for name in header:gmatch("[^,]+") do i = i + 1; col[name] = i end
for line in f:lines() do
  local v = {}
  for field in (line .. ","):gmatch("([^,]*),") do v[#v + 1] = field end
  device, date = v[col.device], v[col.date]
  local key = v[col.dtype] .. (v[col.masked] == "true" and "-masked" or "")
  local m = maps[key] or { Ls = {}, inners = {}, cells = {} }
  maps[key] = m
  local L, inner = tonumber(v[col.L]), tonumber(v[col.inner])
  m.Ls[L], m.inners[inner] = true, true
  m.cells[L .. "," .. inner] = tonumber(v[col.frac_copy])
end
f:close()

local function sorted(set)
  local t = {}
  for k in pairs(set) do t[#t + 1] = k end
  table.sort(t)
  return t
end

local function label(v)
  local k = math.log(v) / math.log(2)
  if v >= 1024 and k == math.floor(k) then return "2^" .. k end
  return tostring(v)
end

for key, m in pairs(maps) do
  local Ls, inners = sorted(m.Ls), sorted(m.inners)
  local data, labels = {}, {}
  for r, L in ipairs(Ls) do
    for c, inner in ipairs(inners) do
      local v = m.cells[L .. "," .. inner]
      data[#data + 1] = ("%d %d %s"):format(c - 1, r - 1, v and ("%.1f"):format(100 * v) or "NaN")
      if v then labels[#labels + 1] = ("%d %d %.1f"):format(c - 1, r - 1, 100 * v) end
    end
    data[#data + 1] = ""
  end
  local xt, yt = {}, {}
  for c, inner in ipairs(inners) do xt[#xt + 1] = ('"%s" %d'):format(label(inner), c - 1) end
  for r, L in ipairs(Ls) do yt[#yt + 1] = ('"%s" %d'):format(label(L), r - 1) end
  local png = ("%s-%s.png"):format(prefix, key)
  local script = os.tmpname()
  local s = assert(io.open(script, "w"))
  s:write(([[
set terminal pngcairo size 900,700
set output "%s"
set title "cuscan cumsum along L of {outer, L, inner}, %s, %% of copy (%s, %s)" noenhanced
set xlabel "inner"
set ylabel "L"
set xtics (%s)
set ytics (%s)
set cbrange [0:100]
set palette defined (0 "#8b0000", 50 "#ff8c00", 85 "#ffff66", 90 "#90ee90", 100 "#006400")
set view map
unset key
plot "-" using 1:2:3 with image, "-" using 1:2:(sprintf("%%.0f", $3)) with labels font ",8"
%s
e
%s
e
]]):format(png, key, device, date, table.concat(xt, ", "), table.concat(yt, ", "), table.concat(data, "\n"),
            table.concat(labels, "\n")))
  s:close()
  local ok = os.execute(gnuplot .. " " .. script)
  os.remove(script)
  if ok ~= 0 then io.stderr:write("grid_plot: gnuplot failed for " .. png .. "\n") os.exit(1) end
  print(png)
end

-- Offsets for a ragged batch, and per-row running totals of a padded batch.
--
--   bin/cuscan examples/ragged_offsets.lua [--rows B] [--maxlen M] [--seed s]
--
-- A ragged batch (sequences, event lists, graph neighbourhoods) is stored two ways:
--   packed: all rows one after another in a flat buffer, with row b starting at offsets[b]; the
--           offsets are the exclusive cumulative sum of the row lengths (offsets[1] = 0);
--   padded: a B x M tensor, row b's items in its first lengths[b] columns and padding after them.
-- This script builds the offsets from int32 lengths with an exclusive cumsum, computes running
-- totals along each padded row with a masked cumsum (the padding, which holds garbage, is masked
-- out), derives each padded item's index in the packed buffer (its row's offset plus an
-- exclusive cumsum of the mask), and checks all three against plain Lua loops.
--
-- int32 sums wrap around on overflow (two's complement). When the lengths add up to
-- 2^31 or more, the offsets are computed in int64 instead: lengths:cumsum(1, {exclusive = true,
-- dtype = "int64"}) accumulates int32 input in int64.
local cs = require("cuscan")

local opts = { seed = 7 }
do
  local known = { rows = true, maxlen = true, seed = true }
  local i = 1
  while arg and arg[i] do
    local key = arg[i]:match("^%-%-(%w+)$")
    if not known[key] or tonumber(arg[i + 1]) == nil then
      io.stderr:write("usage: ragged_offsets.lua [--rows B] [--maxlen M] [--seed s]\n")
      os.exit(2)
    end
    opts[key] = tonumber(arg[i + 1])
    i = i + 2
  end
end
local device = cs.default_device()
local B = opts.rows or (device == "cuda" and 1000000 or 20000)
local M = opts.maxlen or (device == "cuda" and 512 or 64)

-- Lengths 0..M (some rows empty), values 0..99 in the valid columns, garbage in the padding.
local lengths = (cs.rand({ B }, { seed = opts.seed }) * (M + 1)):to("int32")
local values = (cs.rand({ B, M }, { seed = opts.seed + 1 }) * 100):to("int32")
local col = cs.arange(M, { dtype = "int32" }):reshape({ 1, M })
local mask = col:lt(lengths:reshape({ B, 1 }))                      -- true in each row's first lengths[b] columns
local padded = values + mask:logical_not():to("int32") * 1000000007 -- padding: huge numbers that would overflow a sum

-- The scans.
local e0, e1 = cs.event(), cs.event()
e0:record()
local total = lengths:sum()                                         -- a Lua number (int64 sum)
local odtype = total < 2 ^ 31 and "int32" or "int64"
local offsets = lengths:cumsum(1, { exclusive = true, dtype = odtype })
local running = padded:masked_cumsum(mask, 2)                       -- int32 running totals; padding adds 0
local within = mask:cumsum(2, { exclusive = true, dtype = odtype }) -- item's index within its row
local packed_index = within + offsets:reshape({ B, 1 })             -- its index in the packed buffer
e1:record()
local ms = e0:elapsed(e1)

print(string.format("ragged batch: %d rows of 0..%d items (%d in all), int32 on %s; offsets in %s; %.3f ms",
                    B, M, total, device, odtype, ms))

-- Check against plain loops: every row when small, else 200 rows spread over the batch.
local rows = {}
if B * M <= 4000000 then
  for b = 1, B do rows[b] = b end
else
  for i = 1, 200 do rows[i] = 1 + math.floor((i - 1) * (B - 1) / 199) end
end
local all_lengths = lengths:totable()
local offsets_ok, running_ok, index_ok = true, true, true
-- offsets: the whole vector against a loop over the lengths
do
  local got = offsets:totable()
  local acc = 0
  for b = 1, B do
    if got[b] ~= acc then offsets_ok = false end
    acc = acc + all_lengths[b]
  end
  if acc ~= total then offsets_ok = false end
end
print("      row  length    offset  row total")
local shown = 0
for _, b in ipairs(rows) do
  local len = all_lengths[b]
  local vals = values:select(1, b):totable()
  local run = running:select(1, b):totable()
  local idx = packed_index:select(1, b):totable()
  local off = offsets:select(1, b):item()
  local acc = 0
  for j = 1, M do
    if j <= len then
      acc = acc + vals[j]
      if idx[j] ~= off + j - 1 then index_ok = false end
    end
    if run[j] ~= acc then running_ok = false end                   -- padding keeps the row total
  end
  if shown < 5 then
    shown = shown + 1
    print(string.format("  %7d  %6d  %8d  %9d", b, len, off, run[M] or 0))
  end
end
local ok = offsets_ok and running_ok and index_ok
print(string.format("check against plain loops (%d rows): offsets %s, running totals %s, packed indices %s: %s",
                    #rows, offsets_ok and "ok" or "WRONG", running_ok and "ok" or "WRONG",
                    index_ok and "ok" or "WRONG", ok and "PASS" or "FAIL"))
os.exit(ok and 0 or 1)

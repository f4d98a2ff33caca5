-- Calls every public function and method of cuscan with wrong, odd and forged arguments, in a
-- process of its own (spec/no_crash_spec.lua runs it through bin/cuscan, so that a crash fails
-- that spec instead of killing the suite). Each call must return or raise a `cuscan:` error; a
-- method whose self is not what it belongs to must raise one. Prints one PROBLEM line per call
-- that broke the rule and a summary line:
--   walked <calls> calls: <n> returned, <n> cuscan errors, <n> problems
-- Usage: bin/cuscan spec/support/misuse_walk.lua [seed [calls per function]]
local ffi = require("ffi")
local cs = require("cuscan")
local core = require("cuscan.core")
require("cuscan.assertions")
local luassert = require("luassert")

local seed = tonumber(arg and arg[1]) or 1
local per_function = tonumber(arg and arg[2]) or 200

-- minstd, so that a seed replays the walk
local state = seed % 2147483646 + 1
local function rand(n)
  state = state * 48271 % 2147483647
  return state % n + 1
end

local function T(v, opts) return cs.tensor(v, opts) end

-- Argument makers: each call gets fresh values, so a call that frees or fills a tensor cannot
-- disturb the next one. Plausible values come first, so that calls reach past the first check.
local GOOD = {
  { "x", function() return T({ { 1, 2, 3 }, { 4, 5, 6 } }) end },
  { "int tensor", function() return T({ 1, 2, 3 }, { dtype = "int32" }) end },
  { "mask", function() return T({ { true, false, true }, { false, true, true } }) end },
  { "0-d tensor", function() return T(2.5) end },
  { "1", function() return 1 end },
  { "2", function() return 2 end },
  { "-1", function() return -1 end },
  { "{2, 3}", function() return { 2, 3 } end },
  { "{{1, 2}, {3, 4}}", function() return { { 1, 2 }, { 3, 4 } } end },
  { "{reverse = true}", function() return { reverse = true } end },
  { "{dtype = 'int64'}", function() return { dtype = "int64" } end },
  { "{reset = mask}", function() return { reset = T({ { true, false, true }, { false, true, true } }) } end },
  { "{segments = ids}", function() return { segments = T({ { 1, 1, 2 }, { 3, 3, 3 } }, { dtype = "int64" }) } end },
  { "{out = {values, indices}}", function()
      return { out = { cs.zeros({ 2, 3 }), cs.zeros({ 2, 3 }, { dtype = "int64" }) } }
    end },
  { "true", function() return true end },
  { "'float32'", function() return "float32" end },
  { "'cpu'", function() return "cpu" end },
}

local BAD = {
  { "nil", function() return nil end },
  { "0", function() return 0 end },
  { "NaN", function() return 0 / 0 end },
  { "inf", function() return math.huge end },
  { "-inf", function() return -math.huge end },
  { "2^40", function() return 2 ^ 40 end },  -- out of int32's range; as a size, more than any host has
  { "2^63", function() return 2 ^ 63 end },
  { "2^80", function() return 2 ^ 80 end },
  { "-2^63", function() return -2 ^ 63 end },
  { "0.5", function() return 0.5 end },
  { "int64 cdata", function() return 0x7fffffffffffffffLL end },
  { "uint64 cdata", function() return 0xffffffffffffffffULL end },
  { "string", function() return "nonsense" end },
  { "'float16'", function() return "float16" end },
  { "'cuda'", function() return "cuda" end },
  { "false", function() return false end },
  { "{}", function() return {} end },
  { "{0 / 0}", function() return { 0 / 0 } end },
  { "{2^63, 0}", function() return { 2 ^ 63, 0 } end },
  { "{-1}", function() return { -1 } end },
  { "ragged table", function() return { { 1 }, { 1, 2 } } end },
  { "{mask = 1}", function() return { mask = 1 } end },
  { "{out = {}}", function() return { out = {} } end },
  { "{reset = x, segments = x}", function() local x = T({ 1, 2 }) return { reset = x, segments = x } end },
  { "{out = {x, x}}", function() local x = T({ { 1, 2, 3 }, { 4, 5, 6 } }) return { out = { x, x } } end },
  { "{rtol = 0 / 0}", function() return { rtol = 0 / 0 } end },
  { "table with a metatable", function() return setmetatable({}, { __index = function() return 1 end }) end },
  { "function", function() return print end },
  { "coroutine", function() return coroutine.create(print) end },
  { "userdata", function() return newproxy() end },
  { "int cdata", function() return ffi.new("int[4]") end },
  { "NULL pointer", function() return ffi.new("void *") end },
  { "NULL cs_tensor *", function() return ffi.new("cs_tensor *") end },
  { "NULL cs_event *", function() return ffi.new("cs_event *") end },
  { "event", function() return cs.event("cpu") end },
  { "freed tensor", function() local t = T({ 1, 2 }) t:free() return t end },
  { "forged tensor (newproxy of a tensor)", function() return newproxy(T({ 1 })) end },
  { "tensor without its metatable", function() local t = T({ 1, 2 }) debug.setmetatable(t, nil) return t end },
  { "tensor with a foreign metatable", function() local t = T({ 1, 2 }) debug.setmetatable(t, { __index = {} }) return t end },
  { "tensor whose environment was replaced", function()
      local t = T({ 1, 2 })
      debug.setfenv(t, {})
      collectgarbage()
      return t
    end },
  { "bool tensor of another shape", function() return T({ true, false }) end },
  { "float64 tensor", function() return T({ 1, 2 }, { dtype = "float64" }) end },
  { "empty tensor", function() return cs.zeros({ 0, 3 }) end },
  { "view", function() return T({ { 1, 2 }, { 3, 4 } }):transpose(1, 2) end },
}

local POOL = {}
for _, v in ipairs(GOOD) do POOL[#POOL + 1] = v end
for _, v in ipairs(BAD) do POOL[#POOL + 1] = v end

-- Not an object that methods may take as self: every bad value but the real tensors among them (a
-- tensor whose environment was replaced stays one until its handle is collected).
local NOT_SELF = {}
for _, v in ipairs(BAD) do
  if not v[1]:match("^bool tensor") and not v[1]:match("^float64") and not v[1]:match("^empty")
     and not v[1]:match("^view") and not v[1]:match("^tensor whose") then
    NOT_SELF[#NOT_SELF + 1] = v
  end
end
for _, v in ipairs(GOOD) do
  if not v[1]:match("tensor") and v[1] ~= "x" and v[1] ~= "mask" then NOT_SELF[#NOT_SELF + 1] = v end
end

local calls, returned, raised, problems = 0, 0, 0, 0

local function text(msg)
  if type(msg) == "table" and msg.message ~= nil then return tostring(msg.message) end
  return tostring(msg)
end

-- kind: "cuscan" (must raise a cuscan: error), "any" (may return; an error must be cuscan:'s),
-- "assertion" (a luassert failure is fine too)
local function try(label, kind, fn, ...)
  calls = calls + 1
  local ok, err = pcall(fn, ...)
  if ok then
    if kind == "cuscan" then
      problems = problems + 1
      print(("PROBLEM: %s returned instead of raising a cuscan: error"):format(label))
    else
      returned = returned + 1
    end
    return
  end
  local msg = text(err)
  if msg:find("cuscan: ", 1, true) then
    raised = raised + 1
  elseif kind == "assertion" and not (msg:find("attempt to ", 1, true) or msg:find("bad argument", 1, true)) then
    raised = raised + 1  -- a failed assertion, with its own message
  elseif msg:find("not enough memory", 1, true) then
    raised = raised + 1  -- LuaJIT's own allocator limit, not cuscan's
  else
    problems = problems + 1
    print(("PROBLEM: %s raised a non-cuscan error: %s"):format(label, msg))
  end
end

local function pick(list) return list[rand(#list)] end

-- per_function calls of fn with random argument lists drawn from POOL, after a first argument
-- drawn from `firsts` when given
local function walk(name, fn, kind, firsts)
  for _ = 1, per_function do
    local n = rand(5) - 1
    local names, args = {}, {}
    local start = 1
    if firsts then
      local first = pick(firsts)
      names[1], args[1] = first[1], first[2]()
      start = 2
    end
    for i = start, start + n - 1 do
      local v = pick(POOL)
      names[i], args[i] = v[1], v[2]()
    end
    local last = start + n - 1
    try(("%s(%s)"):format(name, table.concat(names, ", ")), kind, fn, unpack(args, 1, last))
  end
end

-- module functions: anything goes, as long as errors are cuscan:'s
local names = {}
for k, v in pairs(cs) do if type(v) == "function" then names[#names + 1] = k end end
table.sort(names)
for _, k in ipairs(names) do walk("cs." .. k, cs[k], "any") end

-- tensor methods: each with every value that is not a tensor as self, then random arguments
local M = core.methods
local mnames = {}
for k in pairs(M) do mnames[#mnames + 1] = k end
table.sort(mnames)
for _, k in ipairs(mnames) do
  -- a freed tensor is still a tensor to x:free() and x:is_freed()
  local not_self = NOT_SELF
  if k == "free" or k == "is_freed" then
    not_self = {}
    for _, v in ipairs(NOT_SELF) do if v[1] ~= "freed tensor" then not_self[#not_self + 1] = v end end
  end
  for _, bad in ipairs(not_self) do
    try(("x:%s with self = %s (dot call)"):format(k, bad[1]), "cuscan", M[k], bad[2](), 1, 1)
  end
  walk("x:" .. k, M[k], "any", { GOOD[1], GOOD[2], GOOD[3], GOOD[4] })
  walk("x:" .. k, M[k], "cuscan", not_self)
end

-- event methods
local e = cs.event("cpu")
for _, k in ipairs({ "record", "elapsed" }) do
  local method = e[k]
  for _, bad in ipairs(NOT_SELF) do
    if bad[1] ~= "event" then
      try(("e:%s with self = %s"):format(k, bad[1]), "cuscan", method, bad[2](), e)
    end
  end
  walk("e:" .. k, method, "any", { { "event", function() return cs.event("cpu"):record() end } })
end
try("e.record()", "cuscan", function() e.record() end)
try("e.elapsed(nil, e)", "cuscan", function() e.elapsed(nil, e) end)
try("e:elapsed(unrecorded)", "cuscan", function() cs.event("cpu"):record():elapsed(cs.event("cpu")) end)
try("e.x = 1", "cuscan", function() e.x = 1 end)

-- operators, indexing, length and printing, wherever one operand carries the tensor metatable
-- (so that the metamethod called is cuscan's, not Lua's own error for, say, a string plus a table)
local TENSOR_MT = getmetatable(T({ 1 }))
local function ours(v) return getmetatable(v) == TENSOR_MT end
local OPS = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
  unm = function(a) return -a end, len = function(a) return #a end,
  index = function(a, b) return a[b] end, newindex = function(a, b, c) a[b] = c end,
  tostring = function(a) return tostring(a) end,
}
local UNARY = { unm = true, len = true, index = true, newindex = true, tostring = true }
local onames = {}
for k in pairs(OPS) do onames[#onames + 1] = k end
table.sort(onames)
for _, k in ipairs(onames) do
  for _, a in ipairs(POOL) do
    for _ = 1, 5 do
      local b, c = pick(POOL), pick(POOL)
      for _, order in ipairs({ { a, b }, { b, a } }) do
        local p, q = order[1], order[2]
        local vp, vq = p[2](), q[2]()
        -- (with a cdata first, LuaJIT's own cdata arithmetic answers, never the other's __add)
        if ours(vp) or (not UNARY[k] and ours(vq) and type(vp) ~= "cdata") then
          try(("%s(%s, %s, %s)"):format(k, p[1], q[1], c[1]), "any", OPS[k], vp, vq, c[2]())
        end
      end
    end
  end
end

-- a tensor's handle is out of reach: no field to read, write or forge
local x = T({ 1, 2 })
try("x.h = nil", "cuscan", function() x.h = nil end)
try("x.h (read)", "any", function() assert(x.h == nil) end)
try("x:cumsum(1) after x.h = nil", "any", function() return x:cumsum(1) end)
try("rawset(x, 'h', nil)", "any", function() pcall(rawset, x, "h", nil) return x:cumsum(1) end)
try("setmetatable(x, {})", "any", function() pcall(setmetatable, x, {}) return x:cumsum(1) end)
try("a table given the tensor metatable", "cuscan", function() return setmetatable({}, getmetatable(x)):cumsum(1) end)
try("a table given the tensor metatable, dtype", "cuscan", function() return setmetatable({}, getmetatable(x)).dtype end)
try("a forged tensor", "cuscan", function() return cs.cumsum(newproxy(x), 1) end)

-- the busted assertions: a failure is an assertion error, never a crash
for _, k in ipairs({ "tensor_near", "tensor_equal", "same_shape" }) do
  walk("assert." .. k, luassert[k], "assertion")
end

-- the launcher's helpers, when run through bin/cuscan (help prints; keep it quiet)
local quiet = io.output()
if rawget(_G, "help") then
  io.output("/dev/null")
  local print_ = print
  print = function() end  -- luacheck: ignore
  walk("help", _G.help, "any")
  print = print_  -- luacheck: ignore
  io.output(quiet)
end
if rawget(_G, "timeit") then
  for _, bad in ipairs(BAD) do
    try(("timeit(%s)"):format(bad[1]), "any", _G.timeit, bad[2](), { runs = 1 })
  end
end

collectgarbage()
print(("walked %d calls: %d returned, %d cuscan errors, %d problems"):format(calls, returned, raised, problems))
os.exit(problems == 0 and 0 or 1)

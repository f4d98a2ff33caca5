-- The REPL (lua/cuscan/repl.lua, lua/cuscan/lineedit.lua): exit, quit and Ctrl-D; ?name; help(x)
-- and help(cs) listing every method and function; the option names help knows against those each
-- function accepts; tab completion, through a pipe and in a terminal (tmux), with readline and
-- with rlwrap.
local cs = require("cuscan")
local H = require("spec.helpers")
local shell = require("spec.support.shell")
local tmux = require("spec.support.tmux")
local help = require("cuscan.help")
local lineedit = require("cuscan.lineedit")
local methods = require("cuscan.core").methods

local q, CUSCAN = shell.q, shell.cuscan

-- Feeds lines to the REPL through a pipe; returns stdout, stderr and the exit status.
local function pipe(lines, env)
  return shell.run(q(CUSCAN), { stdin = table.concat(lines, "\n") .. "\n", env = env })
end

local function sorted_keys(t, pred)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and (not pred or pred(v)) then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

describe("leaving the REPL", function()
  it("exit and quit typed alone leave at once; the lines after them do not run", function()
    for _, word in ipairs({ "exit", "quit", "  exit  ", "quit\t" }) do
      local out, err, status = pipe({ "print('before')", word, "print('after')" })
      assert.equal(0, status, err)
      assert.equal("before\n", out)
    end
  end)

  it("leave with status 1 when a piped line failed, as the end of input does", function()
    local out, err, status = pipe({ "error('boom')", "exit", "print('after')" })
    assert.equal(1, status)
    assert.equal("", out)
    assert.matches("boom", err, 1, true)
  end)

  it("exit(n) and quit(n) leave with status n; exit() and quit() as exit does", function()
    local n = H.rng(H.seed_for("exit status")):int(2, 120)
    for _, f in ipairs({ "exit", "quit" }) do
      local out, _, status = pipe({ "print(1)", ("%s(%d)"):format(f, n), "print(2)" })
      assert.equal(n, status)
      assert.equal("1\n", out)
      out, _, status = pipe({ "print(1)", f .. "()", "print(2)" })
      assert.equal(0, status)
      assert.equal("1\n", out)
    end
    local out, err, status = pipe({ "exit('soon')", "print(2)" })
    assert.equal(1, status)
    assert.equal("2\n", out)
    assert.matches("stdin:1: cuscan: exit: status: expected an integer, got string \"soon\"", err, 1, true)
  end)

  it("a variable named exit is still a variable inside an expression", function()
    local out, err, status = pipe({ "local exit_code = 4 print(exit_code)", "=type(exit)" })
    assert.equal(0, status, err)
    assert.equal("4\nfunction\n", out)
  end)
end)

describe("?name", function()
  it("prints what help prints for a name, a function value, cs or a tensor", function()
    local function same(a, b)
      local o1, e1, s1 = pipe({ "x = cs.ones({2, 3}, {dtype = 'float64', device = 'cpu'})", a })
      local o2, e2, s2 = pipe({ "x = cs.ones({2, 3}, {dtype = 'float64', device = 'cpu'})", b })
      assert.equal(0, s1, e1)
      assert.equal(0, s2, e2)
      assert.equal(o2, o1)
      assert.is_true(#o1 > 40, o1)
      return o1
    end
    assert.matches("^cs%.cumsum%(x, dim%[, opts%]%)", same("?cumsum", 'help"cumsum"'))
    assert.matches("^x:narrow%(d, start, length%)", same("? x:narrow ", 'help"x:narrow"'))
    same("?cs.rand", "help(cs.rand)")
    assert.matches("float64 cpu tensor", same("?x", "help(x)"), 1, true)
    same("?cs", "help(cs)")
    same("?x.cumprod", "help(x.cumprod)")
    assert.matches("Topics:", same("?", "help()"), 1, true)
    assert.matches('no entry named "frobnicate"', same("?frobnicate", 'help"frobnicate"'), 1, true)
  end)
end)

describe("help(x) and help(cs)", function()
  it("list every method of a tensor and every function and field of the module", function()
    local out, err, status = pipe({ "help(cs.zeros({1}))", "print('--')", "help(cs)" })
    assert.equal(0, status, err)
    local of_x, of_cs = out:match("^(.-)\n%-%-\n(.*)$")
    local names = {}
    for n in (of_x .. ","):gmatch("([%w_.:]+)[,\n]") do names[n] = true end
    for _, k in ipairs(sorted_keys(methods)) do
      assert.is_true(names["x:" .. k] == true, "help(x) does not list x:" .. k .. "\n" .. of_x)
    end
    assert.is_true(names["x.dtype"] and names["x.device"], of_x)
    names = {}
    for n in (of_cs .. ","):gmatch("([%w_.:]+)[,\n]") do names[n] = true end
    for _, k in ipairs(sorted_keys(cs)) do
      assert.is_true(names["cs." .. k] == true, "help(cs) does not list cs." .. k .. "\n" .. of_cs)
    end
    assert.not_matches("x:", of_cs, 1, true)
    assert.not_matches("cs%.", of_x)
  end)
end)

describe("the option names help knows", function()
  -- a call of each function with an unknown option; its error lists the options it accepts
  local x, m = cs.ones({ 2 }), cs.tensor({ true, false })
  local CALLS = {
    ["cs.tensor"] = function(o) return cs.tensor({ 1 }, o) end,
    ["cs.zeros"] = function(o) return cs.zeros({ 1 }, o) end,
    ["cs.ones"] = function(o) return cs.ones({ 1 }, o) end,
    ["cs.full"] = function(o) return cs.full({ 1 }, 2, o) end,
    ["cs.rand"] = function(o) return cs.rand({ 1 }, o) end,
    ["cs.arange"] = function(o) return cs.arange(3, o) end,
    ["cs.cumsum"] = function(o) return cs.cumsum(x, 1, o) end,
    ["cs.cumprod"] = function(o) return cs.cumprod(x, 1, o) end,
    ["cs.cummax"] = function(o) return cs.cummax(x, 1, o) end,
    ["cs.cummin"] = function(o) return cs.cummin(x, 1, o) end,
    ["cs.logcumsumexp"] = function(o) return cs.logcumsumexp(x, 1, o) end,
    ["cs.segment_ids_to_reset"] = function(o) return cs.segment_ids_to_reset(x:to("int64"), 1, o) end,
    ["cs.explain"] = function(o) return cs.explain(x, 1, o) end,
    ["x:reverse_cumsum"] = function(o) return x:reverse_cumsum(1, o) end,
    ["x:masked_cumsum"] = function(o) return x:masked_cumsum(m, 1, o) end,
    ["x:to"] = function(o) return x:to(o) end,
    ["cs.allclose"] = function(o) return cs.allclose(x, x, o) end,
    ["timeit"] = function(o) return require("cuscan.repl").timeit(function() end, o) end,
  }

  it("are the options each function accepts", function()
    local checked = 0
    for _, e in ipairs(help.entries) do
      if e.options then
        local call = CALLS[e.name]
        assert.is_function(call, "no call to check the options of " .. e.name)
        local bogus = "zz_" .. H.rng(H.seed_for(e.name)):int(1, 1e6)
        local ok, err = pcall(call, { [bogus] = true })
        assert.is_false(ok, e.name)
        local listed = tostring(err):match("unknown option '" .. bogus .. "' %(expected ([^)]*)%)")
        assert.is_string(listed, e.name .. ": " .. tostring(err))
        local want = {}
        for _, o in ipairs(e.options) do want[#want + 1] = o end
        table.sort(want)
        assert.equal(table.concat(want, ", "), listed, e.name)
        checked = checked + 1
      end
    end
    local calls = 0
    for _ in pairs(CALLS) do calls = calls + 1 end
    assert.equal(calls, checked)
  end)
end)

describe("tab completion", function()
  local complete = lineedit.complete

  local function all_start_with(list, prefix)
    for _, w in ipairs(list) do
      if w:sub(1, #prefix) ~= prefix then return false end
    end
    return true
  end

  local function has(list, w)
    for _, v in ipairs(list) do if v == w then return true end end
    return false
  end

  it("completes cs. names, tensor methods after x: and fields after x. from every prefix", function()
    local had_cs = rawget(_G, "cs")
    rawset(_G, "cs", cs)
    rawset(_G, "spec_tensor", cs.zeros({ 2 }))
    local rng = H.rng(H.seed_for("completion prefixes"))
    for _, k in ipairs(sorted_keys(cs)) do
      local p = "cs." .. k:sub(1, rng:int(0, #k))
      local got = complete(p)
      assert.is_true(has(got, "cs." .. k) and all_start_with(got, p), p .. " -> " .. table.concat(got, " "))
    end
    for _, k in ipairs(sorted_keys(methods)) do
      local p = "spec_tensor:" .. k:sub(1, rng:int(0, #k))
      local got = complete("y = " .. p)
      assert.is_true(has(got, "spec_tensor:" .. k) and all_start_with(got, p), p .. " -> " .. table.concat(got, " "))
    end
    assert.same({ "spec_tensor.data_ptr", "spec_tensor.device", "spec_tensor.device_index",
                  "spec_tensor.device_type", "spec_tensor.dim", "spec_tensor.div", "spec_tensor.dtype" },
                complete("print(spec_tensor.d"))
    assert.same({ "cs.cummax", "cs.cummin", "cs.cumprod", "cs.cumsum" }, complete("cs.cum"))
    rawset(_G, "spec_tensor", nil)
    rawset(_G, "cs", had_cs)
  end)

  it("completes globals and keywords, and nothing for names that do not resolve", function()
    rawset(_G, "spec_global_value", 1)
    assert.same({ "spec_global_value" }, complete("spec_glob"))
    assert.same({ "function" }, complete("local f = func"))
    rawset(_G, "spec_global_value", nil)
    assert.same({}, complete("no_such_table.x"))
    rawset(_G, "cs", cs)
    assert.same({}, complete("cs.no_such_field.x"))
    rawset(_G, "cs", nil)
    assert.same({ "string.format" }, complete("string.form"))
    assert.same({}, complete("cs.zeros({1}):cum"))   -- completing never calls anything
  end)

  it("completes the option names of the call being typed, at a key's place", function()
    assert.same({ "exclusive" }, complete("x:cumsum(2, {ex"))
    assert.same({ "dtype", "exclusive", "initial", "mask", "out", "reset", "reverse", "segments" },
                complete("x:cumsum(2, {reverse = true, "))
    assert.same({ "reset", "reverse" }, complete("x:cummax(2, {re"))
    assert.same({ "out" }, complete("cs.cumsum(x, 1, {mask = m:logical_and(x:gt(1)), o"))
    assert.same({ "device", "devices", "dtype", "seed", "shard_dim" }, complete("cs.rand({2, 3}, {"))
    assert.same({ "device", "dtype" }, complete("x:to{d"))
    assert.same({ "runs" }, complete("timeit(function() end, {ru"))
    assert.same({ "equal_nan" }, complete("cs.allclose(a, b, {eq"))
    -- not at a key's place: a value, or a first argument that is data
    assert.is_false(has(complete("x:cumsum(2, {reverse = "), "reverse"))
    assert.is_false(has(complete("cs.tensor({"), "dtype"))
  end)

  it("completes help topics after ?", function()
    assert.is_true(has(complete("?masked"), "masked_cumsum"))
    assert.is_true(has(complete("?x:nar"), "x:narrow"))
    assert.is_true(all_start_with(complete("?cs.cum"), "cs.cum"))
  end)
end)

describe("the REPL in a terminal (tmux)", function()
  local ok, why = tmux.available()
  local has_readline = lineedit.load_readline()
  local _, rlwrap_status = shell.sh("command -v rlwrap")

  -- Starts the REPL in tmux with a fresh HOME (its history file) and waits for its prompt.
  local function start(env)
    local home = shell.tmpdir()
    env = env or {}
    env.HOME = home
    env.CUSCAN_DEVICE = "cpu"
    local t = tmux.start(q(CUSCAN), env)
    t.home = home
    t:wait_for("\n>$")
    return t
  end

  local function stop(t)
    t:close()
    os.execute("rm -rf " .. q(t.home))
  end

  local function needs_readline()
    if not ok then pending(why) return false end
    if not has_readline then pending("libreadline is not installed (Debian's libreadline8; .ci/run installs it)") return false end
    return true
  end

  it("completes cs. names, a tensor's methods, option names and globals with Tab (readline) #nosanitize", function()
    if not needs_readline() then return end
    local t = start()
    t:type("x = cs.tensor({{1, 2, 3}, {4, 5, 6}})")
    t:key("Enter")
    t:type("x:cums")
    t:key("Tab")
    t:wait_for("> x:cumsum$")
    t:type("(2, {rev")
    t:key("Tab")
    t:wait_for("> x:cumsum%(2, {reverse$")
    t:type(" = true})")
    t:key("Enter")
    local s = t:wait_for("%[cuscan float32 tensor 2x3, cpu%]")
    assert.matches("[[ 6.,  5.,  3.],\n [15., 11.,  6.]]", s, 1, true)
    t:type("cs.ze")
    t:key("Tab")
    t:wait_for("> cs.zeros$")
    t:key("C-u")
    t:type("cs.cum")
    t:key("Tab", "Tab")
    s = t:wait_for("cs%.cumsum")
    assert.matches("cs.cumprod", s, 1, true)
    t:key("C-u")
    t:type("tim")
    t:key("Tab")
    t:wait_for("> timeit$")
    t:key("C-u")
    stop(t)
  end)

  it("keeps a history: Up recalls a line, and ~/.cuscan_history has it #nosanitize", function()
    if not needs_readline() then return end
    local t = start()
    local n = H.rng(H.seed_for("history")):int(100, 999)
    t:type(("=%d + 1"):format(n))
    t:key("Enter")
    t:wait_for(("\n%d\n>$"):format(n + 1))
    t:key("Up")
    t:wait_for(("> =%d %%+ 1$"):format(n))
    t:key("C-u")
    local hist = shell.slurp(t.home .. "/.cuscan_history") or ""
    stop(t)
    assert.matches(("=%d + 1\n"):format(n), hist, 1, true)
  end)

  it("drops the line on Ctrl-C and goes on, as often as it is pressed, in a statement or not #nosanitize", function()
    if not ok then pending(why) return end
    for _, env in ipairs({ {}, { CUSCAN_NO_READLINE = "1", CUSCAN_NO_RLWRAP = "1" } }) do
      local t = start(env)
      for round = 1, 3 do
        t:type("abc")
        t:key("C-c")
        t:type("=" .. round .. " + 100")
        t:key("Enter")
        t:wait_for("%(the line is dropped%)\n>")
      end
      t:type("for i = 1, 3 do")
      t:key("Enter")
      t:key("C-c")
      t:type("x")
      t:key("Enter")
      t:type("=7 * 6")
      t:key("Enter")
      local screen = t:wait_for("\n42\n>$")
      assert.is_nil(screen:find("traceback", 1, true), screen)
      t:type("exit")
      t:key("Enter")
      t:wait_for("%[exited 0%]")
      stop(t)
    end
  end)

  for _, way in ipairs({ { "exit", { "exit", "Enter" } }, { "quit", { "quit", "Enter" } }, { "Ctrl-D", { "C-d" } } }) do
    it("leaves on " .. way[1] .. " #nosanitize", function()
      if not ok then pending(why) return end
      for _, env in ipairs({ {}, { CUSCAN_NO_READLINE = "1", CUSCAN_NO_RLWRAP = "1" } }) do
        local t = start(env)
        t:type("=40 + 2")
        t:key("Enter")
        t:wait_for("\n42\n")
        for _, k in ipairs(way[2]) do
          if k:match("^%l+$") then t:type(k) else t:key(k) end
        end
        t:wait_for("%[exited 0%]")
        stop(t)
      end
    end)
  end

  it("prints help for ?name #nosanitize", function()
    if not needs_readline() then return end
    local t = start()
    t:type("?masked_cumsum")
    t:key("Enter")
    t:wait_for("x:masked_cumsum%(mask, dim%[, opts%]%)")
    stop(t)
  end)

  it("completes names through rlwrap when libreadline is not used #nosanitize", function()
    if not ok then pending(why) return end
    if rlwrap_status ~= 0 then pending("rlwrap is not installed (Debian's rlwrap; .ci/run installs it)") return end
    local t = start({ CUSCAN_NO_READLINE = "1" })
    t:type("x = cs.ones({3})")
    t:key("Enter")
    t:type("x:reverse_cu")
    t:key("Tab")
    t:wait_for("> x:reverse_cumsum")
    t:type("(1)")
    t:key("Enter")
    t:wait_for("%[3%., 2%., 1%.%]")
    t:key("C-d")
    t:wait_for("%[exited 0%]")
    stop(t)
  end)
end)

-- bin/cuscan: scripts with `arg`, -e chunks, --version, the REPL (from a pipe and in a terminal),
-- help for every public function, timeit, readline or rlwrap, symlinks and other working
-- directories. (spec/repl_spec.lua has completion, exit and quit, ?name, in a terminal through tmux.)
-- Everything runs the launcher in a child process and looks at what it prints.
local cs = require("cuscan")
local H = require("spec.helpers")

local shell = require("spec.support.shell")
local root, q, tmpdir = shell.root, shell.q, shell.tmpdir
local CUSCAN = shell.cuscan
local DEV = H.printed_device(cs.default_device())

local function slurp(path) return shell.slurp(path) or "" end

local run = shell.run

local function have(cmd)
  local _, _, status = run("command -v " .. cmd)
  return status == 0
end

describe("bin/cuscan", function()
  it("--version and -v print cs.version", function()
    local out, err, status = run(q(CUSCAN) .. " --version")
    assert.equal(0, status, err)
    assert.equal(cs.version .. "\n", out)
    out = run(q(CUSCAN) .. " -v")
    assert.equal(cs.version .. "\n", out)
  end)

  it("-e runs a chunk with cuscan on the module path and cs preloaded", function()
    local out, err, status = run(q(CUSCAN) .. " -e " ..
      q('print(require("cuscan").version, rawequal(cs, require("cuscan")), cs.tensor{1,2,3}:cumsum(1):totable()[3])'))
    assert.equal(0, status, err)
    assert.equal(cs.version .. "\ttrue\t6\n", out)
    -- several chunks run in order; a syntax error is reported with a non-zero status
    out = run(q(CUSCAN) .. " -e 'a = 20' -e 'print(a + 22)'")
    assert.equal("42\n", out)
    local _, err2, status2 = run(q(CUSCAN) .. " -e 'print('")
    assert.is_not.equal(0, status2)
    assert.matches("command line", err2, 1, true)
  end)

  it("runs a script with arg set as the Lua interpreter sets it, and its arguments as ...", function()
    local dir = tmpdir()
    local script = dir .. "/args.lua"
    local f = io.open(script, "w")
    f:write([[
      local n = select("#", ...)
      print(arg[-1], arg[0], arg[1], arg[2], #arg, n, ...)
      print(cs.version == require("cuscan").version)
    ]])
    f:close()
    local out, err, status = run(q(CUSCAN) .. " " .. q(script) .. " one 'two words'")
    assert.equal(0, status, err)
    assert.equal(("%s\t%s\tone\ttwo words\t2\t2\tone\ttwo words\ntrue\n"):format(CUSCAN, script), out)
    -- options before the script get the negative indices, the launcher the most negative
    out = run(q(CUSCAN) .. " -e 'x = 1' " .. q(script) .. " a")
    assert.equal(("x = 1\t%s\ta\tnil\t1\t1\ta\ntrue\n"):format(script), out)
    local o2 = run(q(CUSCAN) .. " -e 'x = 1' -e " .. q("print(arg[-5], arg[-4], arg[-3], arg[0])") .. " " .. q(script))
    assert.equal(("%s\t-e\tx = 1\t%s\n"):format(CUSCAN, script), o2:match("^[^\n]*\n"))
    os.execute("rm -rf " .. q(dir))
  end)

  it("exits with the script's os.exit status, and with 1 and the message on an error", function()
    local dir = tmpdir()
    local f = io.open(dir .. "/exit.lua", "w")
    f:write("io.write('before ') os.exit(3)\n")
    f:close()
    f = io.open(dir .. "/fail.lua", "w")
    f:write("local x = cs.tensor({1, 2})\nlocal function bad() local y = x:cumsum(2) return y end\nbad()\n")
    f:close()
    local out, _, status = run(q(CUSCAN) .. " exit.lua", { cwd = dir })
    assert.equal(3, status)
    assert.equal("before ", out)
    local _, err
    out, err, status = run(q(CUSCAN) .. " fail.lua", { cwd = dir })
    assert.equal(1, status)
    assert.equal("", out)
    assert.matches("fail.lua:2: cuscan: cumsum: dim: 2 is out of range", err, 1, true)
    assert.matches("in function 'bad'", err, 1, true)       -- the user's frames
    assert.not_matches("core.lua", err, 1, true)            -- not the module's
    _, err, status = run(q(CUSCAN) .. " missing.lua", { cwd = dir })
    assert.equal(1, status)
    assert.matches("missing.lua", err, 1, true)
    os.execute("rm -rf " .. q(dir))
  end)

  it("works from any directory and through a symlink", function()
    local dir = tmpdir()
    os.execute(("ln -s %s %s/cs-link"):format(q(CUSCAN), q(dir)))
    local out, err, status = run("./cs-link -e " .. q("io.write(package.searchpath('cuscan', package.path))"),
                                 { cwd = dir, env = { LUA_PATH = false } })
    assert.equal(0, status, err)
    assert.equal(root .. "/lua/cuscan/init.lua", out)
    out, err, status = run(q(CUSCAN) .. " -e 'io.write(cs.arange(4):sum())'",
                           { cwd = "/" })
    assert.equal(0, status, err)
    assert.equal("6", out)
    os.execute("rm -rf " .. q(dir))
  end)

  it("-h prints the usage; an unknown option is an error", function()
    local out, _, status = run(q(CUSCAN) .. " --help")
    assert.equal(0, status)
    assert.matches("usage: cuscan", out, 1, true)
    assert.matches("-e chunk", out, 1, true)
    local _, err
    _, err, status = run(q(CUSCAN) .. " --frobnicate")
    assert.equal(1, status)
    assert.matches("unrecognized option '--frobnicate'", err, 1, true)
    _, err, status = run(q(CUSCAN) .. " /nonexistent/script.lua")
    assert.equal(1, status)
    assert.matches("^cuscan: cannot open /nonexistent/script.lua", err)
  end)
end)

describe("the REPL from a pipe", function()
  it("runs `echo 'print(cs.tensor{1,2,3}:cumsum(1))' | bin/cuscan`", function()
    local out, err, status = run("echo 'print(cs.tensor{1,2,3}:cumsum(1))' | " .. q(CUSCAN))
    assert.equal(0, status, err)
    assert.equal("[1., 3., 6.]\n[cuscan float32 tensor 3, " .. DEV .. "]\n", out)
    assert.equal("", err)
  end)

  it("prints the value of an expression, with or without a leading =, and no prompts", function()
    local out, err, status = run(q(CUSCAN), { stdin = table.concat({
      "x = cs.tensor({{1, 2, 3}, {4, 5, 6}})",
      "x:cumsum(2)",
      "=x:sum()",
      "1, nil, 'text'",
      "x:shape()",
      "{a = 1, b = {2, 3}}",
      "local y = 5",      -- a statement prints nothing
    }, "\n") .. "\n" })
    assert.equal(0, status, err)
    assert.equal(table.concat({
      "[[ 1.,  3.,  6.],",
      " [ 4.,  9., 15.]]",
      "[cuscan float32 tensor 2x3, " .. DEV .. "]",
      "21",
      "1\tnil\ttext",
      "{2, 3}",
      "{a = 1, b = {2, 3}}",
    }, "\n") .. "\n", out)
  end)

  it("continues a statement that needs more lines on the next one", function()
    local out, err, status = run(q(CUSCAN), { stdin = "for i = 1, 3 do\n  io.write(i, ' ')\nend\n" ..
                                                      "t = {\n1,\n2 }\n#t\nfunction f(a)\nreturn a * 2\nend\nf(21)\n" })
    assert.equal(0, status, err)
    assert.equal("1 2 3 2\n42\n", out)
  end)

  it("prints an error's message (at the line typed) and goes on; exits 1 at the end", function()
    local out, err, status = run(q(CUSCAN), { stdin = table.concat({
      "x = cs.tensor({1, 2})",
      "x:cumsum(3)",
      "error('boom')",
      "1 +* 2",
      "function f() error('deep') end",
      "f()",
      "x:cumsum(1)",
    }, "\n") .. "\n" })
    assert.equal(1, status)
    assert.equal("[1., 3.]\n[cuscan float32 tensor 2, " .. DEV .. "]\n", out)
    assert.matches("stdin:1: cuscan: cumsum: dim: 3 is out of range", err, 1, true)
    assert.matches("stdin:1: boom", err, 1, true)
    assert.matches("stdin:1: unexpected symbol near '1'", err, 1, true)
    assert.matches("stdin:1: deep\nstack traceback:\n\tstdin:1: in function 'f'", err, 1, true)
  end)

  it("exits on os.exit() and at the end of input; an unfinished statement at the end is an error", function()
    local out, _, status = run(q(CUSCAN), { stdin = "print('a')\nos.exit(4)\nprint('b')\n" })
    assert.equal(4, status)
    assert.equal("a\n", out)
    local err
    out, err, status = run(q(CUSCAN), { stdin = "print('a')\nfor i = 1, 2 do\n" })
    assert.equal(1, status)
    assert.equal("a\n", out)
    assert.matches("unfinished", err, 1, true)
  end)

  it("prints large tensors abbreviated with their dtype, shape and device", function()
    local out, err, status = run(q(CUSCAN), { stdin = "cs.rand({100, 200}, {seed = 1}):cumsum(2)\n" })
    assert.equal(0, status, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal("[cuscan float32 tensor 100x200, " .. DEV .. "]", lines[#lines])
    assert.is_true(#lines <= 10, out)
    assert.matches("...", lines[1], 1, true)
    assert.equal(" ...,", lines[4])
  end)

  it("make repl starts the same REPL", function()
    -- only on an up-to-date build (as `make test` leaves it), which make repl does not rebuild
    local vars = shell.fresh_build_vars()
    if not vars then
      pending("the library in use is not the source tree's up-to-date build (run `make test`)")
      return
    end
    local out, err, status = run("make -s --no-print-directory " .. vars .. " repl", { cwd = root, stdin = "=6 * 7\n" })
    assert.equal(0, status, err)
    assert.matches("42\n$", out)
  end)
end)

describe("help", function()
  local function repl(lines)
    local out, err, status = run(q(CUSCAN), { stdin = table.concat(lines, "\n") .. "\n" })
    assert.equal(0, status, err)
    return out
  end

  it("prints the signature and description of a function given as a value or a name", function()
    local by_value = repl({ "help(cs.cumsum)" })
    assert.matches("^cs%.cumsum%(x, dim%[, opts%]%) / x:cumsum%(dim%[, opts%]%)\n", by_value)
    assert.matches("cumulative sum of x along dim", by_value, 1, true)
    assert.matches("Errors:", by_value, 1, true)
    assert.equal(by_value, repl({ 'help"cumsum"' }))
    assert.equal(by_value, repl({ "x = cs.zeros({2})", "help(x.cumsum)" }))
    assert.equal(by_value, repl({ "help('x:cumsum')" }))
    assert.matches("^x:narrow%(d, start, length%)\n", repl({ 'help"narrow"' }))
    assert.matches("^timeit%(fn%[, opts%]%)\n", repl({ "help(timeit)" }))
  end)

  it("lists the topics, the module's functions and a tensor's methods", function()
    local all = repl({ "help()" })
    assert.matches("Scans: cs.cumsum, cs.cumprod, cs.cummax, cs.cummin, cs.logcumsumexp,", all, 1, true)
    assert.matches("cs.segment_ids_to_reset, cs.explain, cs.force_family, x:reverse_cumsum,", all, 1, true)
    assert.matches("cs.rand", repl({ "help(cs)" }), 1, true)
    assert.matches("x:narrow", repl({ "help(cs.zeros({1}))" }), 1, true)
    assert.matches('no entry named "frobnicate"', repl({ 'help"frobnicate"' }), 1, true)
    assert.matches("^help: call it: help%(%) for an overview", repl({ "help" }))
    assert.matches("entries that mention it: .*cs%.cumprod", repl({ 'help"product"' }))
  end)

  it("has an entry for every function of the module and every tensor method", function()
    local out = repl({
      "missing = {}",
      "for k, v in pairs(cs) do if not help.find('cs.' .. k) then missing[#missing + 1] = 'cs.' .. k end end",
      "for k in pairs(require('cuscan.core').methods) do if not help.find('x:' .. k) then missing[#missing + 1] = 'x:' .. k end end",
      "table.sort(missing)",
      "print('missing: ' .. table.concat(missing, ' '))",
      "n = 0 for k, v in pairs(cs) do if type(v) == 'function' then n = n + 1 end end print(n)",
    })
    assert.matches("^missing: \n", out)
    local nfun = 0
    for _, v in pairs(cs) do if type(v) == "function" then nfun = nfun + 1 end end
    assert.equal(nfun, tonumber(out:match("\n(%d+)\n$")))
    assert.is_true(nfun >= 20)
  end)

  it("finds the entry of every function of the module and every method given as a value", function()
    local out = repl({
      "bad = {}",
      "for k, v in pairs(cs) do if type(v) == 'function' then",
      "  local e = help.lookup(v)",
      "  if not (e and #e.doc > 20 and e.signature:find(k, 1, true)) then bad[#bad + 1] = 'cs.' .. k end",
      "end end",
      "for k, v in pairs(require('cuscan.core').methods) do",
      "  local e = help.lookup(v)",
      "  if not (e and #e.doc > 20 and e.signature:find(k, 1, true)) then bad[#bad + 1] = 'x:' .. k end",
      "end",
      "print('bad: ' .. table.concat(bad, ' '))",
    })
    assert.equal("bad: \n", out)
  end)
end)

describe("timeit", function()
  it("prints the median time with device synchronisation and returns the figures", function()
    local out, err, status = run(q(CUSCAN), { stdin = table.concat({
      "x = cs.rand({64, 64}, {seed = 1})",
      "calls = 0",
      "timeit(function() calls = calls + 1; x:cumsum(2) end)",
      "r = timeit(function() x:cumsum(1) end, {runs = 7, quiet = true})",
      "print(r.runs, calls >= 6, r.min <= r.median and r.median <= r.max, r.device)",
      "timeit(42)",
    }, "\n") .. "\n" })
    assert.equal(1, status)     -- the last line is an error
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(2, #lines, out)
    assert.matches("^timeit: median [%d.e+-]+ ms, min [%d.e+-]+ ms, max [%d.e+-]+ ms over %d+ runs %(", lines[1])
    assert.equal("7\ttrue\ttrue\t" .. cs.default_device(), lines[2])
    assert.matches("timeit: fn: expected a function", err, 1, true)
  end)
end)

describe("the REPL in a terminal", function()
  local has_script = have("script")

  -- Runs the launcher on a pseudo-terminal (util-linux `script`), feeding it lines slowly. The
  -- terminal echoes what it is fed, so these specs assume the REPL starts within the first 1.5 s (a
  -- loaded machine running spec files side by side can take a second); `make sanitize` leaves them
  -- out (#nosanitize): under the sanitizers start-up takes longer.
  local function in_terminal(env, lines)
    local feed = {}
    for i, l in ipairs(lines) do feed[#feed + 1] = ("sleep %s; printf '%%s\\n' "):format(i == 1 and 1.5 or 0.3) .. q(l) end
    local cmd = ("(%s; sleep 0.3) | script -qec %s /dev/null"):format(table.concat(feed, "; "),
      q("stty cols 100 rows 40 2>/dev/null; " .. q(CUSCAN)))
    local out, err, status = run(cmd, { env = env })
    return out:gsub("\r", ""), err, status
  end

  -- the terminal's output without the escape sequences readline sends (bracketed paste)
  local function plain(out) return (out:gsub("\27%[[%d;?]*%a", "")) end

  it("prompts and evaluates lines with readline, without rlwrap #nosanitize", function()
    if not has_script then pending("util-linux `script` is not installed") return end
    local le = require("cuscan.lineedit")
    if not le.load_readline() then pending("libreadline is not installed (Debian's libreadline8)") return end
    local home = tmpdir()
    local out = plain(in_terminal({ CUSCAN_RLWRAP = "/nonexistent/rlwrap", HOME = home }, { "=1 + 1", "os.exit()" }))
    os.execute("rm -rf " .. q(home))
    assert.matches("^cuscan " .. cs.version:gsub("%p", "%%%0") .. " %(LuaJIT", out)
    assert.not_matches("rlwrap", out, 1, true)
    assert.not_matches("no line editing", out, 1, true)
    assert.matches("\n> =1 %+ 1\n2\n> ", out)
  end)

  it("without readline or rlwrap, prompts, says once that neither is installed, and evaluates lines #nosanitize", function()
    if not has_script then pending("util-linux `script` is not installed") return end
    local out = in_terminal({ CUSCAN_RLWRAP = "/nonexistent/rlwrap", CUSCAN_NO_READLINE = "1" }, { "=1 + 1", "os.exit()" })
    assert.matches("^cuscan " .. cs.version:gsub("%p", "%%%0") .. " %(LuaJIT", out)
    local _, notes = out:gsub("neither libreadline nor rlwrap is installed", "")
    assert.equal(1, notes)
    assert.matches("\n> =1 %+ 1\n2\n> ", out)
  end)

  it("without readline, runs under rlwrap with the completion words when rlwrap is installed #nosanitize", function()
    if not has_script then pending("util-linux `script` is not installed") return end
    local dir = tmpdir()
    local fake = dir .. "/rlwrap"
    local f = io.open(fake, "w")
    -- a stand-in that records how it was called and its word list, and runs the command after its
    -- options
    f:write("#!/bin/sh\necho \"rlwrap called with: $*\"\nwhile [ $# -gt 0 ] && [ \"${1#-}\" != \"$1\" ]; do\n" ..
            "  case $1 in -f) cp \"$2\" " .. q(dir .. "/words") .. "; shift ;; -C|-b) shift ;; esac; shift\n" ..
            "done\nexec \"$@\"\n")
    f:close()
    os.execute("chmod +x " .. q(fake))
    local out = in_terminal({ CUSCAN_RLWRAP = fake, CUSCAN_NO_READLINE = "1" }, { "=2 + 2", "os.exit()" })
    local words = slurp(dir .. "/words")
    local list_file = out:match("%-f (%S+) ")
    os.execute("rm -rf " .. q(dir))
    assert.matches("rlwrap called with: %-C cuscan %-b %S+ %-f %S+ luajit " .. CUSCAN:gsub("%p", "%%%0"), out)
    assert.not_matches("no line editing", out, 1, true)
    -- the terminal echoes the typed line before the prompt when the REPL starts slowly (a GPU to
    -- open), so the result may follow the prompt on the same line
    assert.matches("=2 + 2", out, 1, true)
    assert.matches("\n>? ?4\r?\n", out)
    for _, w in ipairs({ "cumsum", "cumprod", "masked_cumsum", "narrow", "rand", "reverse", "exclusive", "timeit",
                         "help", "exit", "quit", "dtype", "device" }) do
      assert.matches("\n" .. w .. "\n", "\n" .. words, 1, true)
    end
    assert.is_nil(io.open(list_file, "r"), "the REPL removes the word list once rlwrap has read it")
  end)

  it("uses neither rlwrap nor prompts when reading a pipe", function()
    local out, err, status = run(q(CUSCAN), { stdin = "=3\n", env = { CUSCAN_RLWRAP = "/nonexistent/rlwrap" } })
    assert.equal(0, status, err)
    assert.equal("3\n", out)
    assert.equal("", err)
  end)
end)

-- Installing: `make install PREFIX=...` into a fresh prefix, the installed bin/cuscan from another
-- directory (scripts, -e, the REPL from a pipe), `make uninstall`; the LuaRocks rockspec.
local cs = require("cuscan")

local shell = require("spec.support.shell")
local root, q, tmpdir = shell.root, shell.q, shell.tmpdir

local slurp = shell.slurp

local sh = shell.sh

local function exists(path)
  local _, status = sh("test -e " .. q(path))
  return status == 0
end

local make_vars = shell.fresh_build_vars

describe("make install and make uninstall", function()
  it("install the library, the modules and bin/cuscan under PREFIX, which work from anywhere", function()
    local vars = make_vars()
    if not vars then pending("the library in use is not the source tree's up-to-date build (run `make test`)") return end
    local prefix = tmpdir() .. "/inst"
    local out, status = sh(("cd %s && make -s --no-print-directory %s install PREFIX=%s"):format(q(root), vars, q(prefix)))
    assert.equal(0, status, out)
    for _, f in ipairs({ "/lib/cuscan/libcuscan.so", "/lib/cuscan/cuscan.cdef", "/share/lua/5.1/cuscan/init.lua",
                         "/bin/cuscan" }) do
      assert.is_true(exists(prefix .. f), prefix .. f)
    end
    assert.matches('\nCUSCAN_INSTALLED_PREFIX="' .. prefix:gsub("%p", "%%%0") .. '"\n', slurp(prefix .. "/bin/cuscan"))

    -- from another directory, with nothing on the environment pointing at the source tree
    local clean = "cd / && env -u LUA_PATH -u CUSCAN_LIB -u CUSCAN_LAUNCHER "
    out, status = sh(clean .. q(prefix .. "/bin/cuscan") .. " -e " .. q('print(require("cuscan").version)'))
    assert.equal(0, status, out)
    assert.equal(cs.version .. "\n", out)
    out, status = sh(clean .. q(prefix .. "/bin/cuscan") .. " -e " ..
                     q("io.write(package.searchpath('cuscan', package.path), ' ', require('cuscan.core').lib_path)"))
    assert.equal(0, status, out)
    local modpath, libpath = out:match("^(%S+) (%S+)$")
    assert.equal(prefix .. "/share/lua/5.1/cuscan/init.lua", modpath)
    assert.equal(1, libpath:find(prefix, 1, true))
    assert.matches("/lib/cuscan/libcuscan%.so$", libpath)
    out, status = sh(clean .. q(prefix .. "/bin/cuscan") .. " --version")
    assert.equal(cs.version .. "\n", out)
    out, status = sh(clean .. "echo '=cs.tensor{1,2,3}:cumsum(1):totable()[3]' | " .. q(prefix .. "/bin/cuscan"))
    assert.equal(0, status, out)
    assert.equal("6\n", out)
    out, status = sh(clean .. q(prefix .. "/bin/cuscan") .. " " .. q(root .. "/examples/ragged_offsets.lua") ..
                     " --rows 20 --maxlen 4")
    assert.equal(0, status, out)
    assert.matches("PASS\n$", out)

    out, status = sh(("cd %s && make -s --no-print-directory %s uninstall PREFIX=%s"):format(q(root), vars, q(prefix)))
    assert.equal(0, status, out)
    for _, f in ipairs({ "/lib/cuscan", "/share/lua/5.1/cuscan", "/bin/cuscan" }) do
      assert.is_false(exists(prefix .. f), prefix .. f)
    end
    -- nor the folders install made for them
    assert.equal("", (sh("find " .. q(prefix) .. " -mindepth 1")))
    sh("rm -rf " .. q(prefix:match("^(.*)/inst$")))
  end)

  it("the installed launcher still finds its modules when the prefix is moved", function()
    local vars = make_vars()
    if not vars then pending("the library in use is not the source tree's up-to-date build (run `make test`)") return end
    local base = tmpdir()
    local out, status = sh(("cd %s && make -s --no-print-directory %s install PREFIX=%s"):format(q(root), vars,
                                                                                                q(base .. "/a")))
    assert.equal(0, status, out)
    sh(("mv %s %s"):format(q(base .. "/a"), q(base .. "/b")))
    out, status = sh("cd / && env -u LUA_PATH -u CUSCAN_LIB " .. q(base .. "/b/bin/cuscan") .. " -e " ..
                     q("io.write(package.searchpath('cuscan', package.path))"))
    sh("rm -rf " .. q(base))
    assert.equal(0, status, out)
    assert.equal(base .. "/b/share/lua/5.1/cuscan/init.lua", out)
  end)
end)

describe("cuscan-scm-1.rockspec", function()
  local path = root .. "/cuscan-scm-1.rockspec"

  it("is a LuaRocks 3 rockspec that builds and installs with the Makefile", function()
    local env = {}
    local chunk = assert(loadfile(path))
    setfenv(chunk, env)
    chunk()
    assert.equal("3.0", env.rockspec_format)
    assert.equal("cuscan", env.package)
    assert.equal("scm-1", env.version)
    assert.is_string(env.source.url)
    assert.is_string(env.description.summary)
    assert.same({ "lua == 5.1" }, env.dependencies)
    assert.equal("make", env.build.type)
    assert.equal("all", env.build.build_target)
    assert.equal("install", env.build.install_target)
    assert.same({ PREFIX = "$(PREFIX)", LUADIR = "$(LUADIR)", LIBDIR = "$(LIBDIR)", BINDIR = "$(BINDIR)" },
                env.build.install_variables)
    -- the targets it names exist in the Makefile
    local mk = slurp(root .. "/Makefile")
    assert.matches("\nall:", mk, 1, true)
    assert.matches("\ninstall:", mk, 1, true)
  end)

  -- README's way: Debian's luarocks with lua5.1 (the interpreter LuaRocks then runs under, so that
  -- it builds for Lua 5.1, LuaJIT's version) and liblua5.1-0-dev, and a plain `luarocks make`.
  -- The library in use is reused: CUDA= as it was built (the Makefile reads it from the
  -- environment), so that the spec never starts a CUDA build of its own.
  it("installs into a LuaRocks tree where require('cuscan') and bin/cuscan work, and removes cleanly", function()
    local _, has = sh("command -v luarocks && command -v lua5.1")
    if has ~= 0 then pending("luarocks or lua5.1 is not installed (.ci/run installs them)") return end
    local vars = make_vars()
    if not vars then pending("the library in use is not the source tree's up-to-date build (run `make test`)") return end
    local tree = tmpdir()
    local lr = ("luarocks --tree %s"):format(q(tree))
    local cuda = vars:match("CUDA=(%d)")
    local out, status = sh(("cd %s && %s %s make cuscan-scm-1.rockspec"):format(q(root),
      cuda and ("CUDA=" .. cuda) or "", lr))
    assert.equal(0, status, out)
    -- a build for Lua 5.1: the modules and the library where LuaJIT's paths look
    assert.is_true(exists(tree .. "/share/lua/5.1/cuscan/init.lua"), out)
    assert.is_true(exists(tree .. "/lib/lua/5.1/cuscan/libcuscan.so"), out)
    out, status = sh(("cd / && eval \"$(%s path)\" && luajit -e %s"):format(lr,
      q("local cs = require('cuscan') io.write(cs.version, ' ', cs.tensor({1, 2, 3}):cumsum(1):totable()[3])")))
    assert.equal(0, status, out)
    assert.equal(cs.version .. " 6", out)
    -- bin/cuscan is the launcher itself (starting LuaJIT), not a wrapper that runs it under Lua 5.1
    assert.matches("^#!/bin/sh\n", slurp(tree .. "/bin/cuscan"))
    out, status = sh("cd / && " .. q(tree .. "/bin/cuscan") .. " -e 'io.write(cs.arange(5):sum())'")
    assert.equal(0, status, out)
    assert.equal("10", out)
    out, status = sh(lr .. " remove cuscan")
    assert.equal(0, status, out)
    -- nothing of cuscan is left: LuaRocks' own manifest and empty folders alone
    out = sh(("cd %s && find . -type f ! -name manifest; find . -iname '*cuscan*'"):format(q(tree)))
    assert.equal("", out)
    sh("rm -rf " .. q(tree))
  end)
end)

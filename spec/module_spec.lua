-- Loading the module: the library beside the module or from $CUSCAN_LIB, an installed layout,
-- CUSCAN_DEVICE, the version. Run in child processes so the environment can vary.
-- (before anything here requires it: .busted's helper loaded it once for the whole run)
local loaded_before_this_file = package.loaded["cuscan"]
local H = require("spec.helpers")
local cs = require("cuscan")

local root = H.root
local LUA_PATH = ("%s/lua/?.lua;%s/lua/?/init.lua;%s"):format(root, root, package.path)
local q, run = H.quote, H.run_lua

describe("the module", function()
  it("is loaded once for a whole busted run, before busted insulates each spec file", function()
    assert.is_table(loaded_before_this_file)
    assert.is_true(rawequal(loaded_before_this_file, cs))
  end)

  it("reports a version string from the library", function()
    assert.matches("^%d+%.%d+%.%d+", cs.version)
    local C = require("cuscan.core").C
    assert.equal(require("ffi").string(C.cs_version()), cs.version)
    assert.same({ "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16" }, cs.dtypes)
  end)

  it("loads from another working directory", function()
    local out, status = run("local cs = require('cuscan') io.write(cs.version, ' ', cs.zeros({2}):sum())",
                            { PWD = "/" })
    assert.equal(0, status, out)
    assert.equal(cs.version .. " 0", out)
    out, status = H.shell(("cd / && LUA_PATH=%s luajit -e %s"):format(q(LUA_PATH),
      q("io.write(require('cuscan').tensor({1,2,3}):cumsum(1):totable()[3])")))
    assert.equal(0, status, out)
    assert.equal("6", out)
  end)

  it("CUSCAN_DEVICE=cpu makes cpu the default device", function()
    local out, status = run("io.write(require('cuscan').default_device())", { CUSCAN_DEVICE = "cpu" })
    assert.equal(0, status, out)
    assert.equal("cpu", out)
  end)

  it("an unknown CUSCAN_DEVICE is an error at require", function()
    local out, status = run("require('cuscan')", { CUSCAN_DEVICE = "tpu" })
    assert.is_not.equal(0, status)
    assert.matches("cuscan: CUSCAN_DEVICE", out, 1, true)
    assert.matches("tpu", out, 1, true)
  end)

  it("CUSCAN_DEVICE=cuda without a device is an error giving the reason", function()
    local out, status = run("io.write(require('cuscan').default_device())", { CUSCAN_DEVICE = "cuda" })
    if cs.cuda_available() then
      assert.equal(0, status, out)
      assert.equal("cuda", out)
    else
      assert.is_not.equal(0, status)
      assert.matches("CUDA is not available", out, 1, true)
      assert.matches(cs.cuda_unavailable_reason(), out, 1, true)
    end
  end)

  it("CUSCAN_LIB picks the library; a wrong path is a clear error", function()
    local lib = require("cuscan.core").lib_path
    local out, status = run("io.write(require('cuscan').version)", { CUSCAN_LIB = lib })
    assert.equal(0, status, out)
    assert.equal(cs.version, out)
    out, status = run("require('cuscan')", { CUSCAN_LIB = "/nonexistent/libcuscan.so" })
    assert.is_not.equal(0, status)
    assert.matches("cuscan: cannot find libcuscan.so", out, 1, true)
    assert.matches("/nonexistent/libcuscan.so", out, 1, true)
  end)

  it("refuses a library of another version with one cuscan: line naming both versions", function()
    local lib = require("cuscan.core").lib_path
    local dir = H.shell("mktemp -d"):gsub("%s+$", "")
    -- stand-in libraries: one of another version, one without cs_version, beside the real declarations
    local src = dir .. "/other.c"
    local f = assert(io.open(src, "w"))
    f:write('const char *cs_version(void) { return "0.0.7"; }\nint cs_other(void) { return 0; }\n')
    f:close()
    local cmds = {
      ("mkdir -p %s/a %s/b %s/c"):format(q(dir), q(dir), q(dir)),
      ("cc -shared -fPIC -o %s/a/libcuscan.so %s"):format(q(dir), q(src)),
      ("cp %s/a/libcuscan.so %s/c/"):format(q(dir), q(dir)),   -- (no declarations beside it)
      ("printf 'int cs_none(void) { return 0; }\\n' > %s/none.c"):format(q(dir)),
      ("cc -shared -fPIC -o %s/b/libcuscan.so %s/none.c"):format(q(dir), q(dir)),
      ("cp %s/cuscan.cdef %s/a/ && cp %s/cuscan.cdef %s/b/"):format(q(lib:match("^(.*)/")), q(dir),
                                                                   q(lib:match("^(.*)/")), q(dir)),
    }
    local out, status = H.shell(table.concat(cmds, " && "))
    if status ~= 0 then
      H.shell("rm -rf " .. q(dir))
      pending("cannot build a stand-in library with cc: " .. out)
      return
    end
    out, status = run("require('cuscan')", { CUSCAN_LIB = dir .. "/a/libcuscan.so" })
    local out_b, status_b = run("require('cuscan')", { CUSCAN_LIB = dir .. "/b/libcuscan.so" })
    local out_c, status_c = run("require('cuscan')", { CUSCAN_LIB = dir .. "/c/libcuscan.so" })
    H.shell("rm -rf " .. q(dir))
    assert.is_not.equal(0, status_c)
    assert.matches("is version 0.0.7, but the Lua modules", out_c, 1, true)
    assert.is_not.equal(0, status)
    assert.matches("cuscan: " .. (dir .. "/a/libcuscan.so"):gsub("%p", "%%%0") .. " is version 0%.0%.7, " ..
                   "but the Lua modules in [^\n]* are version " .. cs.version:gsub("%p", "%%%0"), out)
    assert.matches("rebuild the library with `make`", out, 1, true)
    assert.is_not.equal(0, status_b)
    assert.matches("is version unknown (it has no cs_version)", out_b, 1, true)
  end)

  -- the module copied into <prefix>/share/lua/5.1/cuscan and the library into <prefix>/<libdir>;
  -- returns what a child luajit prints after require("cuscan") from another directory
  local function installed(libdir, extra_env)
    local lib = require("cuscan.core").lib_path
    local srcdir = lib:match("^(.*)/[^/]*$")
    local prefix = os.tmpname()
    os.remove(prefix)
    local cmd = table.concat({
      ("mkdir -p %s/share/lua/5.1/cuscan %s/%s"):format(q(prefix), q(prefix), libdir),
      ("cp %s/lua/cuscan/*.lua %s/share/lua/5.1/cuscan/"):format(q(root), q(prefix)),
      ("cp %s %s/%s/libcuscan.so"):format(q(lib), q(prefix), libdir),
      ("cp %s/cuscan.cdef %s/%s/cuscan.cdef"):format(q(srcdir), q(prefix), libdir),
    }, " && ")
    local out, status = H.shell(cmd)
    assert.equal(0, status, out)
    local path = ("%s/share/lua/5.1/?.lua;%s/share/lua/5.1/?/init.lua;;"):format(prefix, prefix)
    out, status = H.shell(("cd / && env -u CUSCAN_LIB LUA_PATH=%s %s luajit -e %s"):format(q(path), extra_env or "",
      q("local cs = require('cuscan') io.write(require('cuscan.core').lib_path, '|', cs.tensor({1,2}):cumsum(1):totable()[2])")))
    H.shell("rm -rf " .. q(prefix))
    return out, status, prefix
  end

  it("loads from an installed layout: <prefix>/share/lua/5.1/cuscan and <prefix>/lib/cuscan", function()
    local out, status, prefix = installed("lib/cuscan")
    assert.equal(0, status, out)
    assert.matches("/lib/cuscan/libcuscan.so|3", out, 1, true)
    assert.matches(prefix, out, 1, true)
  end)

  it("loads from a LuaRocks tree: the library in lib/lua/5.1/cuscan", function()
    local out, status, prefix = installed("lib/lua/5.1/cuscan")
    assert.equal(0, status, out)
    assert.matches("/lib/lua/5.1/cuscan/libcuscan.so|3", out, 1, true)
    assert.matches(prefix, out, 1, true)
  end)

  it("device_info is a table with a CUDA device and nil without one", function()
    local info = cs.device_info()
    if cs.cuda_available() then
      assert.is_string(info.name)
      assert.is_true(info.total_memory > 0)
      assert.matches("^%d+%.%d+$", info.compute_capability)
      assert.equal(("%d.%d"):format(info.major, info.minor), info.compute_capability)
      assert.is_true(info.multiprocessors > 0)
    else
      assert.is_nil(info)
    end
  end)
end)

H.each_device("timing events", function(dev, it)
  it("measure the time between two recorded points", function()
    local e0, e1 = cs.event(dev), cs.event(dev)
    assert.is_true(rawequal(e0, e0:record()))
    local x = cs.rand({ 512, 512 }, { seed = 1, device = dev })
    for _ = 1, 5 do x = x:cumsum(2) end
    e1:record()
    local ms = e0:elapsed(e1)
    assert.is_number(ms)
    assert.is_true(ms >= 0 and ms < 60000)
    assert.has_error(function() e0:elapsed(5) end)
  end)
end)

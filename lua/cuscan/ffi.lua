-- cuscan.ffi: loads libcuscan.so and declares its C API to LuaJIT's FFI.
--
-- The library is looked for, in order:
--   $CUSCAN_LIB                                   (an explicit path)
--   <module dir>/../../build/libcuscan.so         (the source tree: lua/cuscan/ -> build/)
--   <module dir>/../../../../lib/cuscan/libcuscan.so
--                                                 (make install: <prefix>/share/lua/5.1/cuscan/ -> <prefix>/lib/cuscan/)
--   <module dir>/../../../../lib/lua/5.1/cuscan/libcuscan.so
--                                                 (a LuaRocks tree: share/lua/5.1/cuscan/ -> lib/lua/5.1/cuscan/)
--   cuscan/libcuscan.so on package.cpath          (wherever LuaRocks' C module directory is)
-- The declarations come from cuscan.cdef beside the library that was loaded (the build writes it
-- from src/cuscan.h with the preprocessor lines removed), so they always match that library.
local ffi = require("ffi")

local function module_dir()
  local src = debug.getinfo(1, "S").source
  if src:sub(1, 1) ~= "@" then return "." end
  local dir = src:sub(2):match("^(.*)[/\\][^/\\]*$")
  return dir or "."
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function dirname(path)
  return path:match("^(.*)[/\\][^/\\]*$") or "."
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

local here = module_dir()
local candidates = {}
local env_lib = os.getenv("CUSCAN_LIB")
if env_lib and env_lib ~= "" then
  candidates[1] = env_lib
else
  candidates[1] = here .. "/../../build/libcuscan.so"
  candidates[2] = here .. "/../../../../lib/cuscan/libcuscan.so"
  candidates[3] = here .. "/../../../../lib/lua/5.1/cuscan/libcuscan.so"
  local on_cpath = package.searchpath and package.searchpath("cuscan.libcuscan", package.cpath)
  if on_cpath then candidates[4] = on_cpath end
end

local lib_path
for _, path in ipairs(candidates) do
  if exists(path) then lib_path = path break end
end
if not lib_path then
  error("cuscan: cannot find libcuscan.so (looked for " .. table.concat(candidates, ", ") ..
        "); run `make` in the cuscan source tree or set CUSCAN_LIB", 0)
end

local loaded, C = pcall(ffi.load, lib_path)
if not loaded then
  error("cuscan: cannot load " .. lib_path .. ": " .. tostring(C), 0)
end

-- The library must be the version these modules were written for (as lua-resty-core's base.lua
-- checks its C side): another one may declare or behave differently from what they expect. Asked
-- first, through a declaration of its own, so that a library of another version is named as such
-- whatever declarations lie beside it. (pcall: the declaration stands if the module is loaded again.)
local VERSION = "0.1.0"
pcall(ffi.cdef, [[const char *cuscan_version_probe(void) __asm__("cs_version");]])
local has_version, lib_version = pcall(function() return ffi.string(C.cuscan_version_probe()) end)
if not has_version then lib_version = "unknown (it has no cs_version)" end
if lib_version ~= VERSION then
  error(("cuscan: %s is version %s, but the Lua modules in %s are version %s; rebuild the library " ..
         "with `make` (or set CUSCAN_LIB to a library of version %s)"):format(lib_path, lib_version, here,
                                                                             VERSION, VERSION), 0)
end

-- The declarations: cuscan.cdef next to the library; in a source tree whose build lacks it, the
-- header itself with the same lines removed as the build removes.
local cdef_path = dirname(lib_path) .. "/cuscan.cdef"
local cdef = read_file(cdef_path)
if not cdef then
  local header = read_file(dirname(lib_path) .. "/../src/cuscan.h")
  if header then
    local lines = {}
    for line in (header .. "\n"):gmatch("([^\n]*)\n") do
      if not (line:match("^#") or line:match('^extern "C"') or line == "}") then
        lines[#lines + 1] = line
      end
    end
    cdef = table.concat(lines, "\n")
    cdef_path = dirname(lib_path) .. "/../src/cuscan.h"
  end
end
if not cdef then
  error("cuscan: cannot find cuscan.cdef next to " .. lib_path .. "; rebuild with `make`", 0)
end

local ok, err = pcall(ffi.cdef, cdef)
if not ok then
  error("cuscan: cannot declare the C API from " .. cdef_path .. ": " .. tostring(err), 0)
end

local instance = {
  C = C,
  lib_path = lib_path,
  cdef_path = cdef_path,
  version = VERSION,
}
return instance

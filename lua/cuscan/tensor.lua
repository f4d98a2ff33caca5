-- cuscan.tensor: the metatable of tensors (core.tensor_mt; a tensor is a userdata proxy whose
-- handle only cuscan.core can reach). Methods come from the parts of the module (views, data,
-- scan, ops); x.dtype and x.device are read-only fields; the arithmetic operators and tostring are
-- metamethods. Every handle the module creates is tied to the garbage collector with
-- ffi.gc(handle, cs_tensor_free).
local registry = debug.getregistry()
if registry["cuscan.tensor"] then return registry["cuscan.tensor"] end
local core = require("cuscan.core")
core.own_file()
require("cuscan.views")
require("cuscan.scan")
local data = require("cuscan.data")
local ops = require("cuscan.ops")
local fmt = require("cuscan.format")

local C = core.C
local M = core.methods
local tonumber = tonumber
local DTYPE_NAME, DEVICE_NAME = core.DTYPE_NAME, core.DEVICE_NAME
local check_tensor = core.check_tensor

M.totable = data.totable
M.item = data.item

local mt = core.tensor_mt
mt.__index = function(x, k)
  local m = M[k]
  if m ~= nil then return m end
  if k == "dtype" then return DTYPE_NAME[tonumber(C.cs_tensor_dtype(check_tensor(x, "dtype", "x", true)))] end
  if k == "device" then return DEVICE_NAME[tonumber(C.cs_tensor_device(check_tensor(x, "device", "x", true)))] end
  return nil
end
mt.__newindex = function(_, k)
  core.raise(string.format("tensor: cannot set field %s (tensors have no writable fields)", core.describe(k)))
end
mt.__tostring = fmt.tostring
for k, v in pairs(ops.meta) do mt[k] = v end

registry["cuscan.tensor"] = M
return M

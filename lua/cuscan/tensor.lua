-- cuscan.tensor: the metatable of tensors (core.tensor_mt; a tensor is { h = handle }, see
-- cuscan.core). Methods come from the parts of the module (views, data, scan, ops); x.dtype and
-- x.device are read-only fields; the arithmetic operators and tostring are metamethods. Every
-- handle the module creates is tied to the garbage collector with ffi.gc(handle, cs_tensor_free).
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

M.totable = data.totable
M.item = data.item

local mt = core.tensor_mt
mt.__index = function(x, k)
  local m = M[k]
  if m ~= nil then return m end
  if k == "dtype" then return DTYPE_NAME[core.dtype_of(x.h)] end
  if k == "device" then return DEVICE_NAME[core.device_of(x.h)] end
  return nil
end
mt.__newindex = function(_, k)
  core.raise(string.format("tensor: cannot set field %s (tensors have no writable fields)", core.describe(k)))
end
mt.__tostring = fmt.tostring
for k, v in pairs(ops.meta) do mt[k] = v end

return M

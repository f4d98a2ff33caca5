-- cuscan.dlpack: handing memory to other code: x:data_ptr(), and DLPack's DLManagedTensor both ways
-- (x:to_dlpack(), cs.from_dlpack(ptr)) so that a C library loaded through the FFI, or any DLPack
-- producer or consumer, shares a tensor without a copy. The C core does the work (src/dlpack.c).
local ffi = require("ffi")
local core = require("cuscan.core")
core.own_file()

local C = core.C
local raise, describe, format = core.raise, core.describe, string.format
local type = type

local M = core.methods
local dlpack = {}

local managed_ptr = ffi.typeof("DLManagedTensor *")
local managed_out = ffi.new("DLManagedTensor *[1]")
local tensor_out = ffi.new("cs_tensor *[1]")

-- x:data_ptr(): the address of x's element 0 (a device pointer on CUDA) as a void * cdata, valid
-- while x (or another view of its storage) lives; NULL for a tensor of no bytes.
function M.data_ptr(x)
  local xh = core.check_tensor(x, "data_ptr", "x")
  return C.cs_tensor_data(xh)
end

-- x:to_dlpack(): a DLManagedTensor * describing x (no copy). Whoever receives it calls its deleter
-- once, when done; until then x's storage stays alive.
function M.to_dlpack(x)
  local xh = core.check_tensor(x, "to_dlpack", "x")
  core.call("to_dlpack", C.cs_to_dlpack, managed_out, xh)
  local m = managed_out[0]
  managed_out[0] = nil
  return m
end

-- cs.from_dlpack(ptr): a tensor over the memory of a DLManagedTensor * (any pointer cdata to one),
-- taking it over: its deleter runs when the tensor and every view of it are gone. On an error ptr
-- stays the caller's.
function dlpack.from_dlpack(ptr)
  -- a DLManagedTensor * (or the struct itself), or a void * from a library that hands out those
  if type(ptr) ~= "cdata" or not (ffi.istype(managed_ptr, ptr) or ffi.istype("void *", ptr) or
                                  ffi.istype("DLManagedTensor", ptr)) then
    raise(format("from_dlpack: ptr: expected a DLManagedTensor * cdata, got %s", describe(ptr)))
  end
  local m = ffi.cast(managed_ptr, ptr)
  if m == nil then raise("from_dlpack: ptr: is NULL") end
  if C.cs_from_dlpack(tensor_out, m) ~= 0 then core.fail("from_dlpack") end
  local h = tensor_out[0]
  tensor_out[0] = nil
  return core.wrap(h)
end

return dlpack

-- Handing memory to other code: x:data_ptr(), and DLPack both ways with a C library built here
-- from the DLPack declarations of cuscan.h and loaded through the FFI (zero copy, deleters called
-- once), plus every DLManagedTensor cuscan cannot take.
local ffi = require("ffi")
local H = require("spec.helpers")
local cs = require("cuscan")
local shell = require("spec.support.shell")

-- A consumer and a producer of DLManagedTensors, as a C library another project would write.
local LIB_SOURCE = [[
#include <stdlib.h>
#include "cuscan.h"

static int deleted;
int spec_dl_deleted(void) { return deleted; }

/* Sums the elements of a float64 tensor on the CPU through its shape and strides, then hands it back. */
double spec_dl_sum_and_delete(DLManagedTensor *m)
{
    const DLTensor *t = &m->dl_tensor;
    const double *p = (const double *)((const char *)t->data + t->byte_offset);
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, off = 0;
        for (int d = t->ndim - 1; d >= 0; d--) {
            int64_t stride = t->strides ? t->strides[d] : 1;
            if (!t->strides) for (int e = d + 1; e < t->ndim; e++) stride *= t->shape[e];
            off += (rest % t->shape[d]) * stride;
            rest /= t->shape[d];
        }
        s += p[off];
    }
    if (m->deleter) m->deleter(m);
    return s;
}

typedef struct { DLManagedTensor m; int64_t shape[2], strides[2]; } made;

static void delete_made(DLManagedTensor *self)
{
    made *x = self->manager_ctx;
    free(x->m.dl_tensor.data);
    free(x);
    deleted++;
}

/* rows x cols int64 values r * 100 + c stored column by column; code/bits pick the dtype tag. */
DLManagedTensor *spec_dl_make(int64_t rows, int64_t cols, int code, int bits)
{
    made *x = calloc(1, sizeof *x);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(rows * cols + 1));
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++) v[c * rows + r] = r * 100 + c;
    x->shape[0] = rows;
    x->shape[1] = cols;
    x->strides[0] = 1;
    x->strides[1] = rows;
    x->m.dl_tensor.data = v;
    x->m.dl_tensor.device.device_type = kDLCPU;
    x->m.dl_tensor.ndim = 2;
    x->m.dl_tensor.dtype.code = (uint8_t)code;
    x->m.dl_tensor.dtype.bits = (uint8_t)bits;
    x->m.dl_tensor.dtype.lanes = 1;
    x->m.dl_tensor.shape = x->shape;
    x->m.dl_tensor.strides = x->strides;
    x->m.manager_ctx = x;
    x->m.deleter = delete_made;
    return &x->m;
}
]]

local function build_lib()
  if H.shell("command -v cc"):match("^%s*$") then return nil, "no C compiler (cc)" end
  local dir = shell.tmpdir()
  shell.spit(dir .. "/specdl.c", LIB_SOURCE)
  local out, status = H.shell(("cc -std=c11 -O1 -fPIC -shared -I%s -o %s %s"):format(
    H.quote(H.root .. "/src"), H.quote(dir .. "/libspecdl.so"), H.quote(dir .. "/specdl.c")))
  if status ~= 0 then
    os.execute("rm -rf " .. shell.q(dir))
    return nil, "the C library did not build: " .. out
  end
  pcall(ffi.cdef, [[
    int spec_dl_deleted(void);
    double spec_dl_sum_and_delete(DLManagedTensor *m);
    DLManagedTensor *spec_dl_make(int64_t rows, int64_t cols, int code, int bits);
  ]])
  local lib = ffi.load(dir .. "/libspecdl.so")
  os.execute("rm -rf " .. shell.q(dir))   -- the loaded library stays mapped
  return lib
end

local CODE = { float32 = { 2, 32 }, float64 = { 2, 64 }, int32 = { 0, 32 }, int64 = { 0, 64 }, bool = { 6, 8 },
               float16 = { 2, 16 }, bfloat16 = { 4, 16 } }

H.each_device("data_ptr and to_dlpack", function(dev, it)
  it("data_ptr is the address of element 0 of the view", function()
    local x = cs.arange(12, { dtype = "float64", device = dev }):reshape({ 3, 4 })
    local p = x:data_ptr()
    assert.equal("cdata", type(p))
    assert.is_true(ffi.istype("void *", p))
    local v = x:narrow(1, 2, 2):narrow(2, 3, 1)
    assert.equal(ffi.cast("char *", p) + 8 * 6, ffi.cast("char *", v:data_ptr()))
    assert.equal(x:data_ptr(), x:transpose(1, 2):data_ptr())
    if dev == "cpu" then
      local d = ffi.cast("double *", p)
      assert.equal(11, d[11])
      d[5] = -1
      assert.equal(-1, x:totable()[2][2])
    end
    assert.is_true(cs.zeros({ 0 }, { device = dev }):data_ptr() == nil)
  end)

  it("to_dlpack describes the tensor without a copy: data, shape, strides, dtype and device", function()
    for _, dt in ipairs(cs.dtypes) do
      local x = cs.zeros({ 2, 3, 4 }, { dtype = dt, device = dev }):permute(3, 1, 2):narrow(1, 2, 3)
      local m = x:to_dlpack()
      assert.is_true(ffi.istype("DLManagedTensor *", m))
      local t = m.dl_tensor
      assert.equal(x:data_ptr(), t.data)
      assert.equal(0, tonumber(t.byte_offset))
      assert.equal(dev == "cuda" and 2 or 1, tonumber(t.device.device_type))
      assert.equal(x.device_index or 0, t.device.device_id)
      assert.equal(3, t.ndim)
      for d = 1, 3 do
        assert.equal(x:size(d), tonumber(t.shape[d - 1]))
        assert.equal(x:stride(d), tonumber(t.strides[d - 1]))
      end
      assert.same(CODE[dt], { t.dtype.code, t.dtype.bits })
      assert.equal(1, t.dtype.lanes)
      m.deleter(m)
    end
  end)

  it("round-trips through cs.from_dlpack sharing memory, and the storage lives until the deleter", function()
    collectgarbage()
    collectgarbage()
    local before = cs.memory_info(dev).in_use
    local x = cs.arange(1000, { dtype = "float64", device = dev })
    local y = cs.from_dlpack(x:narrow(1, 11, 990):to_dlpack())
    assert.same({ 990 }, y:shape())
    assert.equal(10, y:totable()[1])
    y:narrow(1, 1, 1):fill(-3)
    assert.equal(-3, x:totable()[11])
    x:free()
    collectgarbage()
    assert.equal(-3 + 11 + 999, y:narrow(1, 1, 3):sum() + 999 - 12)
    assert.is_true(cs.memory_info(dev).in_use >= before + 8000)
    y = nil
    collectgarbage()
    collectgarbage()
    assert.equal(before, cs.memory_info(dev).in_use)
  end)
end)

describe("DLPack with a C library loaded through the FFI", function()
  local lib, why = build_lib()
  local it_lib = it
  if not lib then it_lib = function(name) pending(name .. " (" .. why .. ")") end end

  it_lib("the library reads a cuscan tensor in place and calls its deleter", function()
    collectgarbage()
    collectgarbage()
    local before = cs.memory_info("cpu").in_use
    local x = cs.rand({ 30, 40 }, { seed = H.seed_for("dlpack sum"), dtype = "float64", device = "cpu" })
    local view = x:transpose(1, 2):narrow(1, 5, 20)
    local want = view:sum()
    local m = view:to_dlpack()
    x, view = nil, nil
    collectgarbage()
    -- the managed tensor alone keeps the storage
    assert.is_true(cs.memory_info("cpu").in_use >= before + 30 * 40 * 8)
    assert.is_true(math.abs(lib.spec_dl_sum_and_delete(m) - want) < 1e-9)
    collectgarbage()
    assert.equal(before, cs.memory_info("cpu").in_use)
  end)

  it_lib("cuscan takes the library's tensor without a copy and hands it back once", function()
    local deleted = lib.spec_dl_deleted()
    local t = cs.from_dlpack(lib.spec_dl_make(3, 4, 0, 64))
    assert.equal("int64", t.dtype)
    assert.equal("cpu", t.device)
    assert.same({ 3, 4 }, t:shape())
    assert.same({ 1, 3 }, t:stride())
    assert.same({ { 0, 1, 2, 3 }, { 100, 101, 102, 103 }, { 200, 201, 202, 203 } }, t:totable())
    assert.same({ { 0, 1, 3, 6 }, { 100, 201, 303, 406 }, { 200, 401, 603, 806 } }, t:cumsum(2):totable())
    local row = t:select(1, 2)
    t = nil
    collectgarbage()
    assert.equal(deleted, lib.spec_dl_deleted())
    assert.same({ 100, 101, 102, 103 }, row:totable())
    row = nil
    collectgarbage()
    collectgarbage()
    assert.equal(deleted + 1, lib.spec_dl_deleted())
  end)

  it_lib("a tensor cuscan cannot take stays the caller's: an error naming the problem, no deleter call", function()
    local deleted = lib.spec_dl_deleted()
    for _, case in ipairs({ { 2, 8, "float8" }, { 4, 32, "bfloat32" }, { 5, 64, "complex64" }, { 1, 8, "uint8" } }) do
      local m = lib.spec_dl_make(2, 2, case[1], case[2])
      H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: dtype: " .. case[3] .. " is not supported" })
      assert.equal(deleted, lib.spec_dl_deleted())
      m.deleter(m)
      deleted = deleted + 1
      assert.equal(deleted, lib.spec_dl_deleted())
    end
  end)
end)

describe("cs.from_dlpack errors", function()
  -- a managed tensor built in Lua over a Lua-owned buffer, with no deleter
  local buf = ffi.new("double[8]", { 1, 2, 3, 4, 5, 6, 7, 8 })
  local shape = ffi.new("int64_t[9]", { 2, 4, 1, 1, 1, 1, 1, 1, 1 })
  local strides = ffi.new("int64_t[9]", { 4, 1, 1, 1, 1, 1, 1, 1, 1 })
  local function managed()
    local m = ffi.new("DLManagedTensor")
    m.dl_tensor.data = buf
    m.dl_tensor.device.device_type = 1
    m.dl_tensor.ndim = 2
    m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes = 2, 64, 1
    m.dl_tensor.shape = shape
    m.dl_tensor.strides = strides
    return m
  end

  it("takes a managed tensor without a deleter and without strides", function()
    -- Lua owns these structs: they must outlive the tensors over them, which are freed first
    local m = managed()
    local t = cs.from_dlpack(m)
    assert.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }, t:totable())
    local m2 = managed()
    local shape7 = ffi.new("int64_t[1]", 7)
    m2.dl_tensor.strides = nil
    m2.dl_tensor.byte_offset = 8
    m2.dl_tensor.shape = shape7
    m2.dl_tensor.ndim = 1
    local t2 = cs.from_dlpack(ffi.cast("void *", m2))
    assert.same({ 2, 3, 4, 5, 6, 7, 8 }, t2:totable())
    t:free()
    t2:free()
    assert.is_true(m ~= nil and m2 ~= nil and shape7 ~= nil)
  end)

  it("refuses what is not a DLManagedTensor, and what cuscan cannot hold", function()
    H.raises(function() cs.from_dlpack(nil) end, { "from_dlpack: ptr: expected a DLManagedTensor * cdata, got nil" })
    H.raises(function() cs.from_dlpack(12345) end, { "from_dlpack: ptr: expected a DLManagedTensor * cdata, got number" })
    H.raises(function() cs.from_dlpack(ffi.new("float[2]")) end, { "from_dlpack: ptr: expected a DLManagedTensor * cdata" })
    H.raises(function() cs.from_dlpack(cs.zeros({ 1 })) end, { "from_dlpack: ptr: expected a DLManagedTensor * cdata" })
    H.raises(function() cs.from_dlpack(ffi.cast("DLManagedTensor *", nil)) end, { "from_dlpack: ptr: is NULL" })
    local m = managed()
    H.raises(function() cs.from_dlpack(m.dl_tensor) end, { "from_dlpack: ptr: expected a DLManagedTensor * cdata" })
    m.dl_tensor.device.device_type = 4
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: device: DLPack device type 4 is not supported" })
    m = managed()
    m.dl_tensor.dtype.lanes = 4
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: dtype: float64 with several lanes is not supported" })
    m = managed()
    m.dl_tensor.dtype.code = 9
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: dtype: DLPack type code 9 of 64 bits is not supported" })
    m = managed()
    strides[1] = -1
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: strides: dim 2 has a negative stride" })
    strides[1] = 1
    m.dl_tensor.ndim = 9
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: ndim: 9 dims (at most 8 are supported)" })
    m = managed()
    m.dl_tensor.byte_offset = 4
    H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: data: address", "is not aligned to the 8 bytes of a float64" })
    m = managed()
    m.dl_tensor.device.device_type = 2
    if not cs.cuda_available() then
      H.raises(function() cs.from_dlpack(m) end, { "from_dlpack: CUDA is not available" })
    end
  end)
end)

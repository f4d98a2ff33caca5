-- cuscan.files: cs.save and cs.load. The format comes from the file's extension (.npy, .csv, .txt)
-- or opts.format; cuscan.npy and cuscan.csv know the formats, this module the files: every problem
-- is a "cuscan: load: <path>: ..." (or save) error naming the file, and a save writes a temporary
-- file beside the target and renames it over the target only once everything is written, so a
-- failed save never leaves a partial file under the target's name.
local core = require("cuscan.core")
core.own_file()
local npy = require("cuscan.npy")
local csv = require("cuscan.csv")

local raise, describe, format = core.raise, core.describe, string.format
local type = type
local CPU = core.CPU

local files = {}

local FORMATS = { npy = true, csv = true, txt = true }
local LOAD_OPTS = {
  npy = { format = true, device = true, mmap = true },
  csv = { format = true, device = true, dtype = true, header = true, delimiter = true },
}
LOAD_OPTS.txt = LOAD_OPTS.csv
local SAVE_OPTS = { npy = { format = true }, csv = { format = true, header = true, delimiter = true } }
SAVE_OPTS.txt = SAVE_OPTS.csv

-- The format of a call: opts.format, else the path's extension.
local function format_of(path, opts, fname)
  if type(path) ~= "string" or path == "" then
    raise(format("%s: path: expected a file name, got %s", fname, describe(path)))
  end
  if path:find("\0", 1, true) then   -- C would see the name cut short at the NUL
    raise(format("%s: path: %q contains a NUL byte", fname, path))
  end
  if type(opts) ~= "nil" and type(opts) ~= "table" then   -- (a NULL cdata compares equal to nil)
    raise(format("%s: opts: expected a table of options, got %s", fname, describe(opts)))
  end
  local f = opts and opts.format
  if f ~= nil then
    if not FORMATS[f] then
      raise(format("%s: format: expected \"npy\", \"csv\" or \"txt\", got %s", fname, describe(f)))
    end
    return f
  end
  local ext = path:match("%.([%w]+)$")
  ext = ext and ext:lower()
  if not FORMATS[ext] then
    raise(format("%s: path: cannot tell the format of %q from its extension (use .npy, .csv or .txt, or opts.format)",
                 fname, path))
  end
  return ext
end

-- Checks opts against the options the format takes, naming the format when another one's is given.
local function check_format_opts(opts, allowed, fmt, fname)
  if opts == nil then return {} end
  for k in pairs(opts) do
    if not allowed[k] then
      local other = false
      for _, set in pairs(fname == "load" and LOAD_OPTS or SAVE_OPTS) do other = other or set[k] == true end
      if other then raise(format("%s: %s: this option does not apply to .%s files", fname, tostring(k), fmt)) end
    end
  end
  core.check_opts(opts, allowed, fname)
  return opts
end

local CSV_CHUNK = 1024 * 1024

local function check_delimiter(d, fname)
  if d ~= nil and (type(d) ~= "string" or d == "" or d:find("[\r\n]")) then
    raise(format("%s: delimiter: expected a non-empty string without line breaks, got %s", fname, describe(d)))
  end
  return d
end

-- The text of an I/O error without the file name Lua's io library puts in front of it.
local function reason(err)
  return (tostring(err or "unknown error"):gsub("^.*: ", ""))
end

-- A problem with the file: thrown inside run() below, raised at the caller's line after cleanup.
local function problem_thrower(fname, path)
  return function(fmt, ...)
    error({ file_problem = format("%s: %s: " .. fmt, fname, path, ...) }, 0)
  end
end

-- Runs fn(); on an error, runs cleanup and raises the error again at the caller's line (a cuscan
-- error raised inside fn stops at this module's pcall and would lose it).
local function run(fn, cleanup)
  local ok, a, b = pcall(fn)
  if ok then return a, b end
  cleanup()
  if type(a) == "table" and a.file_problem then raise(a.file_problem) end
  if type(a) == "string" and a:match("^cuscan: ") then raise((a:gsub("^cuscan: ", ""))) end
  error(a, 0)
end

---------------------------------------------------------------------------------------------------
-- cs.load(path[, opts])
---------------------------------------------------------------------------------------------------
-- cs.load(path[, opts]): the tensor in the file at path. opts.device (default: the default device,
-- given by the caller) places it; .npy takes mmap; .csv and .txt take dtype (float64 by default),
-- header and delimiter, and return the header's names second when header is true.
function files.load(path, opts, default_device)
  local fmt = format_of(path, opts, "load")
  opts = check_format_opts(opts, LOAD_OPTS[fmt], fmt, "load")
  local bad = problem_thrower("load", path)
  local mmap = core.check_bool_opt(opts.mmap, "load", "mmap")
  if mmap and opts.device ~= nil and opts.device ~= "cpu" then
    raise(format("load: mmap: a memory map gives a CPU tensor; load without mmap to place the data on %s",
                 describe(opts.device)))
  end
  local dev = opts.device ~= nil and core.parse_device(opts.device, "load") or core.parse_device(default_device, "load")
  if mmap then dev = CPU end
  local dtype = opts.dtype ~= nil and core.parse_dtype(opts.dtype, "load") or core.F64
  local header = core.check_bool_opt(opts.header, "load", "header")
  local delim = check_delimiter(opts.delimiter, "load")

  local f, err = io.open(path, "rb")
  if not f then raise(format("load: %s: cannot open: %s", path, reason(err))) end
  local _, rerr = f:read(0)   -- a directory opens, then fails to read
  if rerr then
    f:close()
    raise(format("load: %s: cannot read: %s", path, reason(rerr)))
  end
  local t, names = run(function()
    if fmt == "npy" then
      local size = f:seek("end")
      if not size then bad("cannot read: %s", "not a seekable file") end
      f:seek("set", 0)
      local h = npy.read_header(f, bad)
      npy.check_size(h, size, bad)
      if mmap then return npy.map(path, h, bad) end
      return npy.read(f, h, bad)
    end
    if delim == nil and fmt == "csv" then delim = "," end
    -- Lines cut from chunks of the file, so that a large file is never held whole. (Lua's own line
    -- reader ends a line at a NUL byte: a NUL is found here instead, and means the file is not text.)
    local buf, pos, lineno, first = "", 1, 0, true
    local function next_line()
      while true do
        local stop = buf:find("\n", pos, true)
        if stop then
          local line = buf:sub(pos, stop - 1)
          pos, lineno = stop + 1, lineno + 1
          return line
        end
        local more, e = f:read(CSV_CHUNK)
        if more == nil then
          if e then bad("cannot read: %s", reason(e)) end
          if pos > #buf then return nil end
          local line = buf:sub(pos)
          pos, lineno = #buf + 1, lineno + 1
          return line
        end
        if first then more, first = more:gsub("^\239\187\191", ""), false end  -- a UTF-8 byte order mark
        buf, pos = buf:sub(pos) .. more, 1
        local nul = buf:find("\0", 1, true)
        if nul then
          bad("line %d: a NUL byte: not a text file", lineno + 1 + select(2, buf:sub(1, nul):gsub("\n", "")))
        end
      end
    end
    return csv.read(next_line, dtype, { header = header, delimiter = delim }, bad)
  end, function() f:close() end)
  f:close()
  if dev ~= CPU then t = core.methods.to(t, { device = core.DEVICE_NAME[dev] }) end
  return t, names
end

---------------------------------------------------------------------------------------------------
-- cs.save(path, x[, opts])
---------------------------------------------------------------------------------------------------
local counter = 0

-- Opens a new file beside path that no other writer has (created exclusively), for the rename.
local function open_temporary(path, bad)
  for _ = 1, 100 do
    counter = counter + 1
    local tmp = format("%s.%x%x.tmp", path, os.time() % 0x100000, counter + math.floor(os.clock() * 1e6) % 0x100000)
    local f, err, code = io.open(tmp, "wbx")
    if f then return f, tmp end
    if code ~= 17 then bad("cannot create a file in its directory: %s", reason(err)) end  -- 17: EEXIST
  end
  bad("cannot create a temporary file beside it")
end

-- cs.save(path, x[, opts]): writes x to path in the format of its extension (or opts.format).
function files.save(path, x, opts)
  local fmt = format_of(path, opts, "save")
  local xh = core.check_tensor(x, "save", "x")
  opts = check_format_opts(opts, SAVE_OPTS[fmt], fmt, "save")
  local bad = problem_thrower("save", path)
  local nd = core.ndim_of(xh)
  local delim = check_delimiter(opts.delimiter, "save") or (fmt == "csv" and "," or " ")
  -- what save writes must read back: no delimiter that a number's text may hold (1e-05, nan, inf)
  if delim:find("[%w%.%+%-]") then
    raise(format("save: delimiter: %q could be part of a number's text (digits, letters, '.', '+', '-')", delim))
  end
  local header = opts.header
  if fmt ~= "npy" then
    if nd ~= 1 and nd ~= 2 then
      raise(format("save: x: .%s files hold 1-d and 2-d tensors, got %d dims (save it as .npy)", fmt, nd))
    end
    if header ~= nil then
      if type(header) == "table" then
        local cols = nd == 1 and 1 or core.shape_of(xh)[2]
        if #header ~= cols then
          raise(format("save: header: %d names for %d columns", #header, cols))
        end
        for i = 1, #header do
          if type(header[i]) ~= "string" then
            raise(format("save: header[%d]: expected a string, got %s", i, describe(header[i])))
          end
          if header[i]:find(delim, 1, true) then
            raise(format("save: header[%d]: %q holds the delimiter %q, so it would read back as two names", i,
                         header[i], delim))
          end
        end
        header = table.concat(header, delim)
      elseif type(header) ~= "string" then
        raise(format("save: header: expected a string or a list of column names, got %s", describe(header)))
      end
      if header:find("[\r\n]") then raise("save: header: expected one line") end
    end
  end
  -- the values on the host in row-major order (a CUDA tensor or a view is copied first)
  local c = core.methods.contiguous(core.methods.cpu(x))
  local ch = core.check_tensor(c, "save", "x")
  local f, tmp = run(function() return open_temporary(path, bad) end, function() end)
  run(function()
    local wrote, werr
    if fmt == "npy" then
      wrote, werr = npy.write(f, c, ch)
    else
      local function emit(s) return f:write(s) end
      wrote, werr = true, nil
      if header then wrote, werr = emit(header .. "\n") end
      if wrote then
        local rows = core.methods.totable(c, { exact = true })
        wrote, werr = csv.write(emit, rows, core.dtype_of(ch), delim)
      end
    end
    if not wrote then bad("cannot write: %s", reason(werr)) end
    local closed, cerr = f:close()
    f = nil
    if not closed then bad("cannot write: %s", reason(cerr)) end
    local renamed, rerr = os.rename(tmp, path)
    if not renamed then bad("cannot replace it: %s", reason(rerr)) end
  end, function()
    if f then f:close() end
    os.remove(tmp)
  end)
end

return files

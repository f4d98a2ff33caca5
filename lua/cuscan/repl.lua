-- cuscan.repl: what bin/cuscan runs besides its options: the globals every chunk sees (cs, help,
-- timeit), running a chunk with the user's own stack traceback on an error, the REPL, and how it
-- prints values.
--
-- The REPL reads a terminal through readline when libreadline is there (cuscan.lineedit: history
-- and tab completion), else lines as they come (bin/cuscan then runs it under rlwrap), and reads a
-- pipe the same way without prompts. An expression prints its value, a statement that needs more
-- lines continues on the next, an error prints its message and the REPL goes on; `exit`, `quit`
-- and Ctrl-D leave; `?name` is help"name".
local cs = require("cuscan")
local core = require("cuscan.core")
core.own_file()
local help = require("cuscan.help")
local lineedit = require("cuscan.lineedit")

local format, concat = string.format, table.concat
local stdout, stderr = io.stdout, io.stderr
local raise, describe = core.raise, core.describe

local repl = {}

---------------------------------------------------------------------------------------------------
-- Printing values: tensors as the module prints them, tables as Lua constructors (abbreviated).
---------------------------------------------------------------------------------------------------
local function is_ident(k)
  return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil
end

local function pretty_value(v, depth, seen)
  local t = type(v)
  if t == "string" then return format("%q", v) end
  if t ~= "table" then return tostring(v) end
  local mt = getmetatable(v)
  if mt and mt.__tostring then return tostring(v) end
  if seen[v] then return "{...}" end
  if depth > 3 then return "{...}" end
  seen[v] = true
  local parts = {}
  local n = #v
  local shown = 0
  for i = 1, n do
    shown = shown + 1
    if shown > 60 then parts[#parts + 1] = format("... (%d items)", n) break end
    parts[#parts + 1] = pretty_value(v[i], depth + 1, seen)
  end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
    return type(a) < type(b)
  end)
  for _, k in ipairs(keys) do
    shown = shown + 1
    if shown > 60 then parts[#parts + 1] = "..." break end
    local key = is_ident(k) and k or ("[" .. pretty_value(k, depth + 1, seen) .. "]")
    parts[#parts + 1] = key .. " = " .. pretty_value(v[k], depth + 1, seen)
  end
  seen[v] = nil
  local one = "{" .. concat(parts, ", ") .. "}"
  if #one <= 100 or depth > 1 then return one end
  local ind = string.rep("  ", depth)
  return "{\n" .. ind .. concat(parts, ",\n" .. ind) .. "\n" .. string.rep("  ", depth - 1) .. "}"
end

-- The text the REPL shows for a value: strings as they are, tables as constructors.
function repl.pretty(v)
  if type(v) == "string" then return v end
  return pretty_value(v, 1, {})
end

---------------------------------------------------------------------------------------------------
-- timeit: the median time of a function, measured with events on the default device.
---------------------------------------------------------------------------------------------------
local TIMEIT_OPTS = { runs = true, warmup = true, device = true, quiet = true }
local timing_mt = { __cuscan_printed = true }

function timing_mt.__tostring(r)
  return format("timeit: median %.4g ms, min %.4g ms, max %.4g ms over %d runs (%s)", r.median, r.min, r.max,
                r.runs, r.device ~= "cpu" and "device time, " .. r.device or "cpu")
end

local function count_opt(v, name, least)
  if v ~= nil and not (core.is_int(v) and v >= least) then
    raise(format("timeit: %s: expected an integer >= %d, got %s", name, least, describe(v)))
  end
  return v
end

function repl.timeit(fn, opts)
  if type(fn) ~= "function" then raise("timeit: fn: expected a function, got " .. describe(fn)) end
  opts = core.check_opts(opts, TIMEIT_OPTS, "timeit") or {}
  local device = opts.device == nil and cs.default_device() or
                 core.device_label(core.parse_device(opts.device, "timeit"))
  local runs = count_opt(opts.runs, "runs", 1)
  local warmup = count_opt(opts.warmup, "warmup", 0) or 1
  local quiet = core.check_bool_opt(opts.quiet, "timeit", "quiet")
  local e0, e1 = cs.event(device), cs.event(device)
  for _ = 1, warmup do fn() end
  cs.synchronize()
  local times, total = {}, 0
  while true do
    e0:record()
    fn()
    e1:record()
    local ms = e0:elapsed(e1)
    times[#times + 1] = ms
    total = total + ms
    local n = #times
    if runs then
      if n >= runs then break end
    elseif (n >= 5 and total >= 200) or n >= 1000 or (total >= 5000 and n >= 1) then
      break
    end
  end
  table.sort(times)
  local n = #times
  local median = n % 2 == 1 and times[(n + 1) / 2] or (times[n / 2] + times[n / 2 + 1]) / 2
  local r = setmetatable({ median = median, min = times[1], max = times[n], runs = n, device = device,
                           times = times }, timing_mt)
  if not quiet then print(tostring(r)) end
  return r
end

-- The globals every chunk, script and REPL line sees.
function repl.set_globals()
  rawset(_G, "cs", cs)
  rawset(_G, "help", help)
  rawset(_G, "timeit", repl.timeit)
end

---------------------------------------------------------------------------------------------------
-- Running chunks: an error gives its message and the frames of the user's code.
---------------------------------------------------------------------------------------------------
local protected

-- The frames of the user's code between the error and the protected call, or nil when there is
-- nothing beyond the main chunk that raised it.
local function user_traceback()
  local lines, interesting = {}, false
  local level = 3
  while true do
    local info = debug.getinfo(level, "Slnf")
    if not info or info.func == protected then break end
    if info.what ~= "C" and not info.source:match("[/\\]cuscan[/\\][^/\\]+%.lua$") then
      local where
      if info.what == "main" then
        where = "in main chunk"
      else
        interesting = true
        where = info.name and format("in function '%s'", info.name) or
                format("in function <%s:%d>", info.short_src, info.linedefined)
      end
      lines[#lines + 1] = format("\t%s:%d: %s", info.short_src, info.currentline, where)
    end
    level = level + 1
  end
  if not interesting then return nil end
  return "stack traceback:\n" .. concat(lines, "\n")
end

local function handler(msg)
  if type(msg) ~= "string" then
    local mt = getmetatable(msg)
    msg = (mt and mt.__tostring) and tostring(msg) or ("(error object is a " .. type(msg) .. " value)")
  end
  local tb = user_traceback()
  return tb and (msg .. "\n" .. tb) or msg
end

local function pack(...) return { n = select("#", ...), ... } end

-- fn(...) under the handler: { n =, true, results... } or { n = 2, false, message }.
function protected(fn, ...)
  return pack(xpcall(fn, handler, ...))
end

-- Runs fn(...); on an error, prints the message and the user's frames to stderr and exits 1.
function repl.run_chunk(fn, ...)
  local r = protected(fn, ...)
  if not r[1] then
    stderr:write(r[2], "\n")
    os.exit(1)
  end
end

---------------------------------------------------------------------------------------------------
-- The REPL
---------------------------------------------------------------------------------------------------
local function show_results(n, ...)
  if n == 0 then return end
  local parts = {}
  for i = 1, n do
    local v = select(i, ...)
    local mt = type(v) == "table" and getmetatable(v)
    if mt and mt.__cuscan_printed and n == 1 then return end
    parts[i] = repl.pretty(v)
  end
  stdout:write(concat(parts, "\t"), "\n")
end

-- ?topic: help for a name help knows, else for the value a global name chain holds (?x, ?cs).
local function question(topic)
  if topic == "" then return help() end
  if not help.find(topic) and topic:match("^[%a_][%w_.:]*$") then
    local v = lineedit.resolve((topic:gsub(":", ".")))
    if v ~= nil and type(v) ~= "string" and type(v) ~= "number" then return help(v) end
  end
  help(topic)
end

-- The line editor of a REPL in a terminal: "readline", "rlwrap", "off" (turned off) or
-- "missing" (neither found).
local editor

-- Chooses the line editor before the launcher runs anything (which a restart under rlwrap would
-- run again): readline when libreadline loads; else rlwrap, into which this process turns by
-- running relaunch (a list: the interpreter, the launcher and its arguments) under it.
function repl.choose_line_editor(relaunch)
  if not (lineedit.isatty(0) and lineedit.isatty(1)) then return end
  if os.getenv("CUSCAN_UNDER_RLWRAP") then editor = "rlwrap" return end
  if lineedit.load_readline() then editor = "readline" return end
  if (os.getenv("CUSCAN_NO_RLWRAP") or "") ~= "" then editor = "off" return end
  local p = io.popen("stty size 2>/dev/null")
  local cols = tonumber((p:read("*a") or ""):match("%d+%s+(%d+)")) or 0
  p:close()
  if cols <= 0 then editor = "off" return end   -- rlwrap cannot run in a terminal without a width
  local rlwrap = os.getenv("CUSCAN_RLWRAP") or "rlwrap"
  local found = os.execute("command -v '" .. rlwrap:gsub("'", "'\\''") .. "' >/dev/null 2>&1")
  if found == 0 or found == true then lineedit.exec_rlwrap(rlwrap, relaunch) end
  editor = "missing"
end

local function read_plain(prompt)
  if prompt then
    stdout:write(prompt)
    stdout:flush()
  end
  return io.stdin:read("*l")
end

-- Runs the REPL until the end of input, exit or quit. In a pipe, exits 1 when a line failed.
function repl.run()
  repl.set_globals()
  local tty = lineedit.isatty(0)   -- prompts; line editing also needs stdout to be the terminal
  local words = os.getenv("CUSCAN_RLWRAP_WORDS")
  if words then os.remove(words) end   -- rlwrap has read its word list
  if editor == nil and tty and lineedit.isatty(1) then
    editor = lineedit.load_readline() and "readline" or "missing"
  end
  local read = read_plain
  if editor == "readline" then
    lineedit.start()
    read = lineedit.read
  end
  local failed = false
  local function leave(status)
    if status ~= nil and not core.is_int(status) then
      raise("exit: status: expected an integer, got " .. describe(status))
    end
    stdout:flush()
    stderr:flush()
    os.exit(status or ((not tty and failed) and 1 or 0))
  end
  rawset(_G, "exit", leave)
  rawset(_G, "quit", leave)
  if tty then
    local dev = cs.default_device()
    local info = dev == "cuda" and cs.device_info()
    local why = not cs.cuda_available() and cs.cuda_unavailable_reason() or nil
    stdout:write(format("cuscan %s (%s) on %s%s. help() for help, %sexit or Ctrl-D leaves.\n",
                        cs.version, jit.version, dev,
                        info and (" (" .. info.name .. ")") or why and (" (" .. why .. ")") or "",
                        editor == "missing" and "" or "Tab completes, "))
    if editor == "missing" then
      stdout:write("cuscan: no line editing, history or completion: neither libreadline nor rlwrap is " ..
                   "installed (install one: sudo apt-get install -y libreadline8)\n")
    end
  end
  local buffer
  -- One line read and run; true at the end of input, exit or quit.
  local function step()
    local line = read(tty and (buffer and ">> " or "> ") or nil)
    if line == nil then
      if buffer then
        stderr:write("stdin: unfinished statement at the end of input\n")
        failed = true
      end
      if tty then stdout:write("\n") end
      return true
    end
    if buffer == nil then
      if line:match("^%s*exit%s*$") or line:match("^%s*quit%s*$") then return true end
      local topic = line:match("^%s*%?%s*(.-)%s*$")
      if topic then
        question(topic)
        line = nil
      elseif line:sub(1, 1) == "=" then
        line = "return " .. line:sub(2)
      end
    end
    if line then
      buffer = buffer and (buffer .. "\n" .. line) or line
      -- an expression list: its values are passed to pack (not returned by a tail call, which
      -- would hide the line from error messages)
      local fn = loadstring("local pack_ = ... return pack_(" .. buffer .. "\n)", "=stdin")
      local err
      local wrapped = fn ~= nil
      if not fn then fn, err = loadstring(buffer, "=stdin") end
      if fn then
        buffer = nil
        local res = protected(fn, pack)
        if res[1] and wrapped then res = pack(true, unpack(res[2], 1, res[2].n)) end
        if res[1] then
          show_results(res.n - 1, unpack(res, 2, res.n))
        else
          stderr:write(tostring(res[2]), "\n")
          failed = true
        end
      elseif err:sub(-7) ~= "'<eof>'" then
        stderr:write(err, "\n")
        failed = true
        buffer = nil
      end -- else incomplete: the next line continues the statement
    end
    stdout:flush()
    stderr:flush()
    return false
  end
  -- Ctrl-C reaches Lua as an "interrupted!" error (the luajit program's handler), raised once the
  -- line being typed is read: that line, and a statement it continued, are dropped, as a shell
  -- drops them, and the handler is set again for the next Ctrl-C.
  lineedit.keep_interrupt_handler()
  while true do
    lineedit.rearm_interrupt()
    local ok, done = pcall(step)
    if ok and done then break end
    if not ok then
      if not tostring(done):find("interrupted!", 1, true) then error(done, 0) end
      stdout:write("^C (the line is dropped)\n")
      stdout:flush()
      buffer = nil
    end
  end
  leave()
end

return repl

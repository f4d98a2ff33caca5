-- cuscan.lineedit: line editing for the REPL in a terminal. GNU readline through the FFI when
-- libreadline is there (as torch7's trepl does): history in ~/.cuscan_history and tab completion
-- of globals, cs. names, a tensor's methods (x:) and the option names of the call being typed.
-- Without libreadline the launcher runs the REPL under rlwrap, given the same names as a word list.
local ffi = require("ffi")
local help = require("cuscan.help")

local le = {}

-- Each declaration on its own, so that one a program already made does not stop the others.
for _, decl in ipairs({
  "int isatty(int fd);",
  "void free(void *p);",
  "char *strdup(const char *s);",
  "int execvp(const char *file, char *const argv[]);",
  "int setenv(const char *name, const char *value, int overwrite);",
  "char *readline(const char *prompt);",
  "void add_history(const char *line);",
  "int read_history(const char *filename);",
  "int append_history(int nelements, const char *filename);",
  "int history_truncate_file(const char *filename, int nlines);",
  "typedef char *rl_compentry_func_t(const char *text, int state);",
  "typedef char **rl_completion_func_t(const char *text, int start, int end);",
  "char **rl_completion_matches(const char *text, rl_compentry_func_t *entry);",
  "extern rl_completion_func_t *rl_attempted_completion_function;",
  "extern const char *rl_basic_word_break_characters;",
  "extern const char *rl_readline_name;",
  "extern char *rl_line_buffer;",
  "extern int rl_attempted_completion_over;",
  "extern int rl_completion_append_character;",
  "typedef void (*cuscan_sighandler_t)(int);",
  "cuscan_sighandler_t signal(int signum, cuscan_sighandler_t handler);",
}) do
  pcall(ffi.cdef, decl)
end
local C = ffi.C

function le.isatty(fd)
  return C.isatty(fd) == 1
end

-- Ctrl-C: the luajit program's SIGINT handler turns the signal into an "interrupted!" error, and
-- puts the default action (ending the process) back in its place when it fires. The REPL keeps that
-- handler when it starts and sets it again after every line, so every Ctrl-C is such an error.
local SIGINT, SIG_IGN = 2, ffi.cast("cuscan_sighandler_t", 1)
local interrupt_handler
function le.keep_interrupt_handler()
  local ok, old = pcall(C.signal, SIGINT, SIG_IGN)
  if not ok then return end
  C.signal(SIGINT, old)
  interrupt_handler = old
end
function le.rearm_interrupt()
  if interrupt_handler ~= nil then C.signal(SIGINT, interrupt_handler) end
end

---------------------------------------------------------------------------------------------------
-- Completion
---------------------------------------------------------------------------------------------------
local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
                   "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

local function is_tensor(v)
  local t = type(v)
  return (t == "table" or t == "cdata" or t == "userdata") and require("cuscan").is_tensor(v)
end

-- The value a chain of names such as cs or a.b names, starting from the globals; nil when any
-- step fails. Only indexing, never a call, so completing cannot run the user's code.
function le.resolve(chain)
  local v = _G
  for name in chain:gmatch("[^.]+") do
    if type(v) ~= "table" and not is_tensor(v) then return nil end
    local ok, nv = pcall(function() return v[name] end)
    if not ok or nv == nil then return nil end
    v = nv
  end
  return v
end

-- The names a value offers after "." (fields) or ":" (methods).
local function members(v, sep)
  local names = {}
  local function add_keys(t, functions_only)
    for k, x in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and (not functions_only or type(x) == "function") then
        names[k] = true
      end
    end
  end
  if is_tensor(v) then
    add_keys(require("cuscan.core").methods)
    if sep == "." then
      -- the read-only fields (cuscan.tensor's __index)
      for _, f in ipairs({ "dtype", "device", "device_type", "device_index" }) do names[f] = true end
    end
  elseif type(v) == "string" then
    if sep == ":" then add_keys(string) end
  elseif type(v) == "table" then
    add_keys(v, sep == ":")
    local mt = getmetatable(v)
    if type(mt) == "table" and type(rawget(mt, "__index")) == "table" then add_keys(mt.__index, sep == ":") end
  end
  return names
end

-- The name of the function whose opts table the end of `before` is in, at a key's place:
-- "x:cumsum(2, {rev" gives "x:cumsum", "x:to{" gives "x:to"; nil elsewhere (a first argument
-- such as cs.tensor's data is data, not options).
local function opts_call(before)
  local depth, brace = 0, nil
  for i = #before, 1, -1 do
    local c = before:sub(i, i)
    if c == "}" then depth = depth + 1
    elseif c == "{" then
      if depth == 0 then brace = i break end
      depth = depth - 1
    end
  end
  if not brace then return nil end
  local inside = before:sub(brace + 1)
  if not (inside:match("^%s*$") or inside:match(",%s*$")) then return nil end
  local head = before:sub(1, brace - 1):gsub("%s+$", "")
  local name = head:match("([%a_][%w_.:]*)$")
  if name then return name end
  if not head:match(",$") then return nil end
  depth = 0
  for i = #head, 1, -1 do
    local c = head:sub(i, i)
    if c == ")" or c == "}" then depth = depth + 1
    elseif c == "(" or c == "{" then
      if depth == 0 then
        if c == "{" then return nil end
        return (head:sub(1, i - 1):gsub("%s+$", "")):match("([%a_][%w_.:]*)$")
      end
      depth = depth - 1
    end
  end
  return nil
end

local function sorted_matching(set, prefix, base)
  local out = {}
  for name in pairs(set) do
    if name:sub(1, #prefix) == prefix then out[#out + 1] = base .. name end
  end
  table.sort(out)
  return out
end

-- The completions of the word at the end of line (the text before the cursor), as whole words:
-- "cs.cum" gives {"cs.cumprod", "cs.cumsum"}, "x:rev" {"x:reverse_cumsum"}, "x:cumsum(1, {ex"
-- {"exclusive"}, "?mask" the help entries that start so.
function le.complete(line)
  local word = line:match("[%a_][%w_.:]*$") or ""
  local before = line:sub(1, #line - #word)
  if before:match("^%s*%?%s*$") then
    local set = {}
    for _, e in ipairs(help.entries) do
      for _, n in ipairs(e.names) do
        set[n] = true
        set[n:match("[%w_]+$") or n] = true
      end
    end
    return sorted_matching(set, word, "")
  end
  if before:match("[.:]$") then return {} end   -- a member of an expression: it is not evaluated
  if not word:find("[.:]") then
    local fname = opts_call(before)
    local opts = fname and help.options(fname:match("[%a_][%w_]*$"))
    if opts then
      local set = {}
      for _, o in ipairs(opts) do set[o] = true end
      return sorted_matching(set, word, "")
    end
    local set = {}
    for k in pairs(_G) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") then set[k] = true end
    end
    for _, k in ipairs(KEYWORDS) do set[k] = true end
    return sorted_matching(set, word, "")
  end
  local chain, sep, partial = word:match("^(.-)([.:])([%w_]*)$")
  if chain:find(":") then return {} end
  local v = le.resolve(chain)
  if v == nil then return {} end
  return sorted_matching(members(v, sep), partial, chain .. sep)
end

-- Every name completion can give, as bare words (for rlwrap, which completes words without context).
function le.words()
  local set = {}
  local cs = require("cuscan")
  for _, t in ipairs({ _G, cs, require("cuscan.core").methods }) do
    for k in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") then set[k] = true end
    end
  end
  for _, k in ipairs(KEYWORDS) do set[k] = true end
  for _, e in ipairs(help.entries) do
    for _, o in ipairs(e.options or {}) do set[o] = true end
  end
  set.dtype, set.device, set.device_type, set.device_index, set.exit, set.quit = true, true, true, true, true, true
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

---------------------------------------------------------------------------------------------------
-- readline
---------------------------------------------------------------------------------------------------
local rl, history_file

local LIBS = { "readline", "libreadline.so.8", "libreadline.so.7", "libreadline.so.6" }

-- Loads libreadline (unless CUSCAN_NO_READLINE is set); true when it is there.
function le.load_readline()
  if rl then return true end
  if (os.getenv("CUSCAN_NO_READLINE") or "") ~= "" then return false end
  for _, name in ipairs(LIBS) do
    local ok, lib = pcall(ffi.load, name)
    if ok and pcall(function() return lib.readline end) then
      rl = lib
      return true
    end
  end
  return false
end

-- Words break at spaces and punctuation but not at . and :, so cs.cum and x:narrow stay whole
-- (anchored here: readline keeps the pointers).
local BREAK_CHARS = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]?!)}"
local NAME = "cuscan"

-- Starts readline: completion through le.complete and the history file (the one rlwrap -C cuscan
-- keeps).
function le.start()
  -- the candidates of the completion under way, handed to readline one by one
  local pending, at = {}, 0
  local entry = ffi.cast("rl_compentry_func_t *", function(_, state)
    if state == 0 then at = 0 end
    at = at + 1
    local w = pending[at]
    if w == nil then return nil end
    return C.strdup(w)
  end)
  le.callbacks = { entry, ffi.cast("rl_completion_func_t *", function(text, _, finish)
    rl.rl_attempted_completion_over = 1   -- never fall back to file names
    rl.rl_completion_append_character = 0
    local line = ffi.string(rl.rl_line_buffer, finish)
    local ok, list = pcall(le.complete, line)
    if not ok or #list == 0 then return nil end
    -- readline replaces only the text after the last break character
    local cut = #(line:match("[%a_][%w_.:]*$") or "") - #ffi.string(text)
    pending = {}
    for i, w in ipairs(list) do pending[i] = w:sub(cut + 1) end
    return rl.rl_completion_matches(text, entry)
  end) }
  rl.rl_readline_name = NAME
  rl.rl_basic_word_break_characters = BREAK_CHARS
  rl.rl_attempted_completion_function = le.callbacks[2]
  local home = os.getenv("HOME")
  if home and home ~= "" then
    history_file = home .. "/.cuscan_history"
    local f = io.open(history_file, "a")  -- append_history needs the file to exist
    if f then
      f:close()
      rl.history_truncate_file(history_file, 1000)
      rl.read_history(history_file)
    else
      history_file = nil
    end
  end
end

-- One line read with readline and the prompt, or nil at the end of input (Ctrl-D).
-- (Not compiled: readline calls back into Lua for completion, which LuaJIT allows only from
-- interpreted code.)
function le.read(prompt)
  io.stdout:flush()
  local p = rl.readline(prompt)
  if p == nil then return nil end
  local line = ffi.string(p)
  C.free(p)
  if line:match("%S") then
    rl.add_history(line)
    if history_file then rl.append_history(1, history_file) end
  end
  return line
end
jit.off(le.read)

---------------------------------------------------------------------------------------------------
-- rlwrap, without libreadline
---------------------------------------------------------------------------------------------------
-- Replaces this process with rlwrap running cmd (a list: the interpreter, the launcher and its
-- arguments) with the completion words in a file that the REPL removes once it has started.
-- Returns only when rlwrap cannot be run.
function le.exec_rlwrap(rlwrap, cmd)
  local words = os.tmpname()
  local f = io.open(words, "w")
  if not f then return end
  f:write(table.concat(le.words(), "\n"), "\n")
  f:close()
  local argv = { rlwrap, "-C", "cuscan", "-b", "(){}[],'+-=&^%$#@\";|\\.:", "-f", words }
  for _, a in ipairs(cmd) do argv[#argv + 1] = a end
  local cargv = ffi.new("const char *[?]", #argv + 1)
  for i, a in ipairs(argv) do cargv[i - 1] = a end
  C.setenv("CUSCAN_UNDER_RLWRAP", "1", 1)
  C.setenv("CUSCAN_RLWRAP_WORDS", words, 1)
  io.stdout:flush()
  io.stderr:flush()
  C.execvp(rlwrap, ffi.cast("char *const *", cargv))
  os.remove(words)
end

return le

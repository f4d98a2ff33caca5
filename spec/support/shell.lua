-- What the specs that run the launcher, the examples, the README's blocks and `make install` in
-- child processes share: the project root, shell quoting, and small file helpers.
local shell = {}

-- the project root, absolute
local root = debug.getinfo(1, "S").source:match("^@(.*)/spec/support/shell%.lua$") or "."
if root:sub(1, 1) ~= "/" then
  local p = io.popen("cd " .. root .. " && pwd -P")
  root = p:read("*l")
  p:close()
end
shell.root = root
shell.cuscan = root .. "/bin/cuscan"

function shell.q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- A file's contents, or nil when it cannot be read.
function shell.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function slurp_or_empty(path) return shell.slurp(path) or "" end

function shell.spit(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function shell.tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("*l")
  p:close()
  return d
end

-- Runs a shell command; returns its output (stdout and stderr) and exit status.
function shell.sh(cmd)
  local p = io.popen("(" .. cmd .. ") 2>&1; echo \"__status=$?\"")
  local out = p:read("*a")
  p:close()
  local status = tonumber(out:match("__status=(%d+)%s*$"))
  return (out:gsub("__status=%d+%s*$", "")), status
end

-- What a Lua chunk writes when run by LuaJIT on the CPU backend with OMP_NUM_THREADS set to each
-- of threads (asserting that each run exits 0), in that order.
function shell.on_threads(chunk, threads)
  local outs = {}
  for _, n in ipairs(threads) do
    local out, status = shell.sh(("cd %s && CUSCAN_DEVICE=cpu OMP_NUM_THREADS=%d LUA_PATH=%s luajit -e %s"):format(
      shell.q(root), n, shell.q(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;./?.lua;" .. package.path),
      shell.q(chunk)))
    assert(status == 0, out)
    outs[#outs + 1] = out
  end
  return outs
end

-- The shell words that set the variables of env (false unsets one).
function shell.exports(env)
  local parts = {}
  for k, v in pairs(env or {}) do
    if v == false then parts[#parts + 1] = "unset " .. k .. ";" else parts[#parts + 1] = "export " .. k .. "=" .. shell.q(v) .. ";" end
  end
  return table.concat(parts, " ")
end

-- Runs a shell command; returns stdout, stderr and the exit status. opts: stdin (text), cwd, env.
function shell.run(cmd, opts)
  opts = opts or {}
  local base = os.tmpname()
  local parts = {}
  if opts.cwd then parts[#parts + 1] = "cd " .. shell.q(opts.cwd) .. " &&" end
  parts[#parts + 1] = shell.exports(opts.env)
  parts[#parts + 1] = cmd
  local stdin = "/dev/null"
  if opts.stdin then
    stdin = base .. ".in"
    local f = io.open(stdin, "wb")
    f:write(opts.stdin)
    f:close()
  end
  local p = io.popen(("(%s) <%s >%s 2>%s; echo $?"):format(table.concat(parts, " "), shell.q(stdin), shell.q(base .. ".out"),
                                                           shell.q(base .. ".err")))
  local status = tonumber(p:read("*a"):match("(%d+)%s*$"))
  p:close()
  local out, err = slurp_or_empty(base .. ".out"), slurp_or_empty(base .. ".err")
  os.remove(base); os.remove(base .. ".out"); os.remove(base .. ".err"); os.remove(base .. ".in")
  return out, err, status
end

-- The make variables that keep make from rebuilding the library in use, or nil when that library
-- is not the source tree's up-to-date build (specs that run make targets are then pending).
function shell.fresh_build_vars()
  local cs = require("cuscan")
  local lib = require("cuscan.core").lib_path
  local build = shell.sh("cd " .. shell.q(lib:match("^(.*)/libcuscan%.so$")) .. " && pwd -P"):gsub("%s+$", "")
  -- under `make test` the sub-make inherits its variables; else build as the library was built
  local cuda = ""
  if not (os.getenv("MAKEFLAGS") or ""):match("CUDA=") then
    cuda = cs.cuda_unavailable_reason():find("built without CUDA", 1, true) and "CUDA=0" or "CUDA=1"
  end
  local vars = ("%s BUILD=%s"):format(cuda, shell.q(build))
  local _, fresh = shell.sh(("cd %s && make -q %s %s/libcuscan.so %s/cuscan.cdef")
    :format(shell.q(root), vars, shell.q(build), shell.q(build)))
  if fresh ~= 0 or build ~= root .. "/build" then return nil end
  return vars
end

return shell

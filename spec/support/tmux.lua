-- A program in a pseudo-terminal, driven as a person would: tmux sends its keys and reads back its
-- screen. Each session has a tmux server of its own (a private socket, no user configuration).
local shell = require("spec.support.shell")
local q = shell.q

local tmux = {}

-- true, or false and why not.
function tmux.available()
  local _, status = shell.sh("command -v tmux")
  if status ~= 0 then return false, "tmux is not installed (Debian's tmux; .ci/run installs it)" end
  return true
end

local Session = {}
Session.__index = Session

local count = 0

-- Starts cmd (a shell command) in a 100 x 30 terminal with the environment variables in env
-- (false unsets one). When cmd ends, the screen shows "[exited N]" with its status. The shell around
-- cmd outlives a Ctrl-C sent to cmd (its trap), as a user's interactive shell does.
function tmux.start(cmd, env)
  count = count + 1
  -- unique across processes too (math.random starts from one seed in every process)
  local unique = os.tmpname()
  os.remove(unique)
  local socket = ("cuscan-spec-%s-%d"):format(unique:match("[^/]+$"), count)
  local script = "trap : INT; " .. shell.exports(env) .. " " .. cmd .. '; echo "[exited $?]"; sleep 60'
  local self = setmetatable({ socket = socket }, Session)
  local out, status = shell.sh(("tmux -L %s -f /dev/null new-session -d -s spec -x 100 -y 30 %s")
    :format(q(socket), q("sh -c " .. q(script))))
  assert(status == 0, "tmux new-session failed: " .. out)
  return self
end

function Session:tmux(args)
  return shell.sh(("tmux -L %s %s"):format(q(self.socket), args))
end

-- Sends keys as tmux send-keys names them: literal text, or key names such as Tab, Enter, C-d, Up.
function Session:type(text)
  self:tmux("send-keys -t spec -l " .. q(text))
end

function Session:key(...)
  for _, k in ipairs({ ... }) do self:tmux("send-keys -t spec " .. k) end
end

-- The screen's text: lines without trailing spaces, no empty lines at the end.
function Session:screen()
  local out = self:tmux("capture-pane -p -t spec")
  return (out:gsub(" +\n", "\n"):gsub("%s+$", ""))
end

-- Waits until the screen matches pattern (a Lua pattern), then returns the screen; fails with the
-- screen after timeout seconds of wall time (30 by default: a loaded 2-core machine can take
-- seconds to start LuaJIT and load a library built with CUDA).
function Session:wait_for(pattern, timeout)
  timeout = timeout or 30
  local deadline = os.time() + timeout
  repeat
    local s = self:screen()
    if s:find(pattern) then return s end
    os.execute("sleep 0.05")
  until os.time() > deadline
  local s = self:screen()
  if s:find(pattern) then return s end
  error(("the terminal did not show %q within %ss; it shows:\n%s"):format(pattern, timeout, s), 2)
end

function Session:close()
  self:tmux("kill-server")
end

return tmux

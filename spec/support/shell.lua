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

return shell

-- cuscan.launch: `bin/cuscan --nproc N [--nnodes M --node-rank K] script.lua [args]` starts N
-- processes of the script on this host, one per GPU, as torchrun does: each gets CUSCAN_RANK
-- (K * N + its local rank), CUSCAN_WORLD_SIZE (M * N), CUSCAN_LOCAL_RANK, CUSCAN_DEVICE (cuda:<local
-- rank>, or cpu where there is no GPU or CUSCAN_DEVICE=cpu was given), CUSCAN_RENDEZVOUS (the
-- directory given, else a fresh temporary one, removed at the end) and CUSCAN_RUN_ID. Their output
-- lines come prefixed with "[rank R] "; the launcher waits for all of them and, as soon as one
-- fails, stops the others and exits with that one's status.
--
-- This runs before the cuscan module is loaded (no OpenMP threads yet). Between fork and exec a
-- child only makes async-signal-safe calls: its environment is built before the fork.
local ffi = require("ffi")

pcall(ffi.cdef, [[
int fork(void);
int execve(const char *path, char *const argv[], char *const envp[]);
int waitpid(int pid, int *status, int options);
int kill(int pid, int sig);
int pipe(int fds[2]);
int dup2(int from, int to);
int close(int fd);
long read(int fd, void *buf, size_t n);
void _exit(int status);
struct pollfd { int fd; short events; short revents; };
int poll(struct pollfd *fds, unsigned long n, int timeout);
int getpid(void);
char *strerror(int errnum);
]])
local C = ffi.C
local format = string.format
local SIGTERM, SIGKILL, WNOHANG, POLLIN = 15, 9, 1, 1

local launch = {}

local function fail(msg) io.stderr:write("cuscan: ", msg, "\n"); os.exit(2) end

local function positive(opt, v, least)
  local n = tonumber(v)
  if n == nil or n ~= math.floor(n) or n < least then
    fail(format("%s: expected an integer >= %d, got %s", opt, least, v == nil and "nothing" or format("%q", v)))
  end
  return n
end

-- The launcher's options at argv[i..]: returns them and the index of the script.
function launch.parse(argv, i)
  local o = { nproc = nil, nnodes = 1, node_rank = 0 }
  while argv[i] ~= nil do
    local a, v = argv[i], argv[i + 1]
    local name, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    if name then a, v = name, inline end
    local step = inline and 1 or 2
    if a == "--nproc" then o.nproc = positive("--nproc", v, 1)
    elseif a == "--nnodes" then o.nnodes = positive("--nnodes", v, 1)
    elseif a == "--node-rank" then o.node_rank = positive("--node-rank", v, 0)
    else break end
    i = i + step
  end
  if o.nproc == nil then fail("--nnodes and --node-rank go with --nproc N") end
  if o.node_rank >= o.nnodes then fail(format("--node-rank: %d is out of range for --nnodes %d", o.node_rank, o.nnodes)) end
  if argv[i] == nil then fail("--nproc: no script given (usage: cuscan --nproc N script.lua [args])") end
  return o, i
end

local function cstrings(list)
  local arr = ffi.new("char *[?]", #list + 1)
  local keep = {}
  for k, s in ipairs(list) do
    keep[k] = ffi.new("char[?]", #s + 1, s)
    arr[k - 1] = keep[k]
  end
  arr[#list] = nil
  return arr, keep
end

local function environment(extra)
  local env, seen = {}, {}
  for k, v in pairs(extra) do env[#env + 1] = k .. "=" .. v; seen[k] = true end
  local p = io.popen("env -0")
  local all = p:read("*a")
  p:close()
  for entry in all:gmatch("([^%z]+)") do
    local k = entry:match("^([^=]+)=")
    if k and not seen[k] then env[#env + 1] = entry end
  end
  return env
end

local function gpu_count()
  local ok, lib = pcall(require, "cuscan.ffi")
  if not ok or lib.C.cs_cuda_available() == 0 then return 0 end
  local has, n = pcall(function() return tonumber(lib.C.cs_device_count()) end)
  return has and n or 1
end

-- Runs the script (argv[at..]) in nproc processes; command = the interpreter and launcher to run it.
function launch.run(o, command, argv, at)
  local dir, made = os.getenv("CUSCAN_RENDEZVOUS"), false
  if dir == nil or dir == "" then
    if o.nnodes > 1 then fail("--nnodes > 1: set CUSCAN_RENDEZVOUS to a directory every host shares") end
    local p = io.popen("mktemp -d -t cuscan-rendezvous.XXXXXX")
    dir = p:read("*l")
    p:close()
    if not dir then fail("could not make a rendezvous directory (mktemp -d)") end
    made = true
  end
  local run_id = os.getenv("CUSCAN_RUN_ID")
  if run_id == nil or run_id == "" then
    run_id = o.nnodes > 1 and "run" or format("%d-%d", C.getpid(), os.time())
  end
  local want = os.getenv("CUSCAN_DEVICE")
  local on_cpu = want == "cpu" or gpu_count() == 0
  local args = {}
  for _, a in ipairs(command) do args[#args + 1] = a end
  if not args[1]:find("/", 1, true) then
    local p = io.popen("command -v '" .. args[1]:gsub("'", "'\\''") .. "'")
    args[1] = p:read("*l") or args[1]
    p:close()
  end
  local script = io.open(argv[at], "r")
  if not script then fail(format("--nproc: cannot open the script %s", argv[at])) end
  script:close()
  for k = at, #argv do args[#args + 1] = argv[k] end
  local cargv, keep_argv = cstrings(args)

  local kids = {}
  for lr = 0, o.nproc - 1 do
    local rank = o.node_rank * o.nproc + lr
    local env, keep_env = cstrings(environment({
      CUSCAN_RANK = tostring(rank), CUSCAN_WORLD_SIZE = tostring(o.nnodes * o.nproc),
      CUSCAN_LOCAL_RANK = tostring(lr), CUSCAN_DEVICE = on_cpu and "cpu" or format("cuda:%d", lr),
      CUSCAN_RENDEZVOUS = dir, CUSCAN_RUN_ID = run_id, NCCL_NVLS_ENABLE = os.getenv("NCCL_NVLS_ENABLE") or "0",
    }))
    local out, err = ffi.new("int[2]"), ffi.new("int[2]")
    if C.pipe(out) ~= 0 or C.pipe(err) ~= 0 then fail("pipe failed") end
    io.stdout:flush(); io.stderr:flush()
    local pid = C.fork()
    if pid == 0 then
      C.dup2(out[1], 1); C.dup2(err[1], 2)
      C.close(out[0]); C.close(err[0]); C.close(out[1]); C.close(err[1])
      C.execve(cargv[0], cargv, env)
      C._exit(127)
    end
    if pid < 0 then fail("fork failed") end
    C.close(out[1]); C.close(err[1])
    kids[#kids + 1] = { pid = pid, rank = rank, fds = { out[0], err[0] }, bufs = { "", "" }, keep = keep_env }
  end
  local _ = keep_argv

  local sinks = { io.stdout, io.stderr }
  local function emit(kid, which, text, flush_all)
    local buf = kid.bufs[which] .. text
    local sink = sinks[which]
    for line in buf:gmatch("([^\n]*)\n") do sink:write(format("[rank %d] %s\n", kid.rank, line)) end
    buf = buf:match("([^\n]*)$")
    if flush_all and buf ~= "" then sink:write(format("[rank %d] %s\n", kid.rank, buf)); buf = "" end
    kid.bufs[which] = buf
    sink:flush()
  end

  local status, first_failed, live = 0, nil, #kids
  local wstatus = ffi.new("int[1]")
  local chunk = ffi.new("char[65536]")
  local open = {}
  for _, kid in ipairs(kids) do
    for w, fd in ipairs(kid.fds) do open[#open + 1] = { kid = kid, which = w, fd = fd } end
  end
  while #open > 0 or live > 0 do
    if #open > 0 then
      local pfds = ffi.new("struct pollfd[?]", #open)
      for k, e in ipairs(open) do pfds[k - 1].fd, pfds[k - 1].events = e.fd, POLLIN end
      C.poll(pfds, #open, 200)
      for k = #open, 1, -1 do
        local e = open[k]
        if pfds[k - 1].revents ~= 0 then
          local n = tonumber(C.read(e.fd, chunk, 65536))
          if n > 0 then
            emit(e.kid, e.which, ffi.string(chunk, n))
          else
            emit(e.kid, e.which, "", true)
            C.close(e.fd)
            table.remove(open, k)
          end
        end
      end
    end
    for _, kid in ipairs(kids) do
      if not kid.done and C.waitpid(kid.pid, wstatus, WNOHANG) == kid.pid then
        kid.done, live = true, live - 1
        local w = wstatus[0]
        local code = (w % 128 == 0) and math.floor(w / 256) % 256 or 128 + w % 128
        if code ~= 0 and not first_failed then
          first_failed, status = kid, code
          io.stderr:write(format("cuscan: rank %d exited with status %d; stopping the other processes\n", kid.rank, code))
          for _, other in ipairs(kids) do
            if not other.done then C.kill(other.pid, SIGTERM) end
          end
          kid.term_at = os.time()
        end
      end
    end
    if first_failed and os.time() - first_failed.term_at > 10 then
      for _, other in ipairs(kids) do if not other.done then C.kill(other.pid, SIGKILL) end end
    end
  end
  if made then os.execute(format("rm -rf '%s'", dir:gsub("'", "'\\''"))) end
  io.stdout:flush()
  os.exit(status)
end

return launch

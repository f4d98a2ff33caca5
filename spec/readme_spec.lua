-- README.md cannot drift: every fenced code block in it is run or checked here.
--   ```lua        run as a script by bin/cuscan; must exit 0 (they assert what they show)
--   ```lua cuda   the same on a CUDA device; pending (with the reason) without one
--   ```lua spec   run by busted as a spec file; must report 0 failed
--   ```repl       a REPL transcript: the lines after "> " are fed to bin/cuscan on the CPU and
--                 what it prints must be the lines that follow (timings may differ)
--   ```sh         shell commands: only real make targets, existing files and real options
-- Any other block is an error, so a new block must be one of these. The API reference section is
-- help.markdown() of lua/cuscan/help.lua (`make readme`), and the quick start is exactly two commands.
local cs = require("cuscan")

local shell = require("spec.support.shell")
local root, q, tmpdir = shell.root, shell.q, shell.tmpdir
local CUSCAN = shell.cuscan

local slurp = shell.slurp

local spit = shell.spit

-- Runs a shell command from the project root; returns its output (stdout and stderr together,
-- in order) and exit status.
local function sh(cmd, stdin)
  local input = "/dev/null"
  if stdin then
    input = os.tmpname()
    spit(input, stdin)
  end
  local p = io.popen(("cd %s && (%s) <%s 2>&1; echo \"__status=$?\""):format(q(root), cmd, q(input)))
  local out = p:read("*a")
  p:close()
  if stdin then os.remove(input) end
  local status = tonumber(out:match("__status=(%d+)%s*$"))
  return (out:gsub("__status=%d+%s*$", "")), status
end

local README = slurp(root .. "/README.md") or ""

-- The fenced blocks: { info = "lua", text = "...", line = n }.
local function blocks(text)
  local out, n, cur = {}, 0, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if cur then
      if line:match("^```%s*$") then
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    else
      local info = line:match("^```(.*)$")
      if info then cur = { info = info:gsub("%s+$", ""), lines = {}, line = n } end
    end
  end
  assert(cur == nil, "README.md: a fenced block that starts on line " .. (cur and cur.line or 0) .. " is not closed")
  for _, b in ipairs(out) do b.text = table.concat(b.lines, "\n") .. "\n" end
  return out
end

local BLOCKS = blocks(README)

local function of_kind(info)
  local list = {}
  for _, b in ipairs(BLOCKS) do if b.info == info then list[#list + 1] = b end end
  return list
end

describe("README.md", function()
  it("exists and has only code blocks of the kinds this spec runs or checks", function()
    assert.is_true(#README > 1000)
    local kinds = { lua = true, ["lua cuda"] = true, ["lua spec"] = true, repl = true, sh = true }
    for _, b in ipairs(BLOCKS) do
      assert.is_true(kinds[b.info] == true, ("README.md:%d: a block marked %q (expected one of lua, lua cuda, lua spec, repl, sh)")
                                          :format(b.line, b.info))
    end
    assert.is_true(#of_kind("lua") >= 3)
    assert.equal(1, #of_kind("repl"))
    assert.is_true(#of_kind("lua spec") >= 1)
  end)

  it("shows exactly two quick-start commands: make demo, then make test", function()
    local section = README:match("\n## Quick start\n(.-)\n## ")
    assert.is_string(section)
    local first = section:match("```sh\n(.-)```")
    assert.equal("make demo\nmake test\n", first)
  end)

  it("keeps the marked table for the performance numbers of bench/RESULTS.md", function()
    local tbl = README:match("<!%-%- performance table: filled from the latest run in bench/RESULTS%.md %-%->\n(.-)<!%-%- end of performance table %-%->")
    assert.is_string(tbl)
    assert.matches("^| case", tbl)
    local rows = 0
    for _ in tbl:gmatch("\n| [^\n]*") do rows = rows + 1 end
    assert.is_true(rows >= 8)
  end)

  it("carries the API reference of lua/cuscan/help.lua, covering every function of the module", function()
    local section = README:match("<!%-%- API reference: [^\n]*%-%->\n(.-)<!%-%- end of API reference %-%->")
    assert.is_string(section, "README.md has no marked API reference section")
    local help = require("cuscan.help")
    assert.equal(help.markdown(), section, "README.md's API reference differs from lua/cuscan/help.lua: run make readme")
    assert.equal(README, help.readme(README))
    -- the REPL's help is the same module
    local out, status = sh(q(CUSCAN) .. " -e 'io.write(help.markdown())'")
    assert.equal(0, status, out)
    assert.equal(help.markdown(), out)
    -- every public function and method is named in it
    for k, v in pairs(cs) do
      if type(v) == "function" then assert.matches("`cs." .. k .. "(", section, 1, true) end
    end
    for k in pairs(require("cuscan.core").methods) do
      local named = section:find("`x:" .. k .. "(", 1, true) or section:find("`m:" .. k .. "(", 1, true)
      assert.is_truthy(named, "x:" .. k .. " is not in the API reference")
    end
  end)

  it("make readme rewrites a stale API reference section from lua/cuscan/help.lua", function()
    local dir = tmpdir()
    local stale = README:gsub("(<!%-%- API reference: [^\n]*%-%->\n).-(<!%-%- end of API reference %-%->)",
                              "%1### Devices\n\n- `cs.gone()`: stale.\n%2")
    assert.is_not.equal(README, stale)
    spit(dir .. "/README.md", stale)
    local out, status = sh("make -s --no-print-directory readme README_MD=" .. q(dir .. "/README.md"))
    assert.equal(0, status, out)
    assert.equal(README, slurp(dir .. "/README.md"))
    spit(dir .. "/README.md", "no markers here\n")
    out, status = sh("make -s --no-print-directory readme README_MD=" .. q(dir .. "/README.md"))
    assert.is_not.equal(0, status)
    assert.matches("cuscan: .*README%.md: no API reference section", out)
    sh("rm -rf " .. q(dir))
  end)

  describe("lua blocks", function()
    -- runs a block through bin/cuscan; it must exit 0
    local function run_block(b)
      local file = os.tmpname() .. ".lua"
      spit(file, b.text)
      local out, status = sh(q(CUSCAN) .. " " .. q(file))
      os.remove(file)
      assert.equal(0, status, ("README.md:%d:\n%s"):format(b.line, out))
    end
    for _, b in ipairs(of_kind("lua")) do
      it("run: the block at README.md:" .. b.line, function() run_block(b) end)
    end
    for _, b in ipairs(of_kind("lua cuda")) do
      it("run on CUDA: the block at README.md:" .. b.line, function()
        if not cs.cuda_available() then
          pending("skipped: " .. cs.cuda_unavailable_reason())
          return
        end
        run_block(b)
      end)
    end
  end)

  it("lua spec blocks pass under busted", function()
    for _, b in ipairs(of_kind("lua spec")) do
      local dir = sh("mktemp -d"):gsub("%s+$", "")
      local file = dir .. "/readme_block_spec.lua"
      spit(file, b.text)
      local out, status = sh(("LUA_PATH=%s luajit \"$(command -v busted)\" --output=spec/support/summary.lua %s")
        :format(q(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. (os.getenv("LUA_PATH") or "") .. ";;"), q(file)))
      sh("rm -rf " .. q(dir))
      assert.equal(0, status, ("README.md:%d:\n%s"):format(b.line, out))
      assert.matches("\n%d+ passed, 0 failed", out)
      assert.not_matches("\n0 passed", out)
    end
  end)

  it("repl transcript: the REPL prints what the README shows", function()
    local b = of_kind("repl")[1]
    local inputs, expected = {}, {}
    for _, line in ipairs(b.lines) do
      local input = line:match("^> (.*)$") or line:match("^>> (.*)$")
      if input then inputs[#inputs + 1] = input else expected[#expected + 1] = line end
    end
    assert.is_true(#inputs >= 8 and #inputs <= 12, "the tour has " .. #inputs .. " lines")
    local out = sh("CUSCAN_DEVICE=cpu " .. q(CUSCAN), table.concat(inputs, "\n") .. "\n")
    local got = {}
    for line in out:gmatch("([^\n]*)\n") do got[#got + 1] = line end
    assert.equal(#expected, #got, out)
    for i = 1, #expected do
      local e, g = expected[i], got[i]
      if e:match("^timeit: ") then
        local pat = "^timeit: median [%d.e+-]+ ms, min [%d.e+-]+ ms, max [%d.e+-]+ ms over %d+ runs %(cpu%)$"
        assert.matches(pat, e)
        assert.matches(pat, g)
      else
        assert.equal(e, g, ("README.md:%d: transcript line %d"):format(b.line, i))
      end
    end
  end)

  it("sh blocks name only real make targets, files and options", function()
    local makefile = slurp(root .. "/Makefile")
    local targets = {}
    for t in makefile:gmatch("\n([%w][%w-]*):") do targets[t] = true end
    local checked = 0
    for _, b in ipairs(of_kind("sh")) do
      for _, line in ipairs(b.lines) do
        if line:match("%S") and not line:match("^%s*#") then
          checked = checked + 1
          for cmd in (line .. "|"):gmatch("%s*([^|]-)%s*|") do
            local words = {}
            for w in cmd:gmatch("%S+") do words[#words + 1] = w end
            local where = ("README.md:%d: %s"):format(b.line, line)
            local prog = words[1]
            if prog == "make" then
              local named = 0
              for i = 2, #words do
                if not words[i]:match("^[%u_]+=") then
                  assert.is_true(targets[words[i]] == true, where .. ": no make target " .. words[i])
                  named = named + 1
                end
              end
              assert.is_true(named >= 1, where)
            elseif prog == "bin/cuscan" then
              local script = words[2]
              if script and script:match("%.lua$") then
                local src = slurp(root .. "/" .. script)
                assert.is_string(src, where .. ": no file " .. script)
                for i = 3, #words do
                  local opt = words[i]:match("^%-%-(%w+)$")
                  if opt then
                    assert.is_truthy(src:find("[--" .. opt .. " ", 1, true), where .. ": " .. script .. " has no option --" .. opt)
                  end
                end
              end
            elseif prog == "echo" then
              -- a pipe into the REPL: run it
              local out, status = sh(line:gsub("bin/cuscan", q(CUSCAN)))
              assert.equal(0, status, where .. "\n" .. out)
              assert.is_true(#out > 0, where)
            elseif prog == "busted" then
              assert.is_truthy(slurp(root .. "/" .. words[#words] .. "/my_experiment_spec.lua"), where)
            elseif prog == "luarocks" then
              if words[2] == "remove" then
                assert.equal("cuscan", words[3], where)
              else
                assert.equal("make", words[2], where)
                assert.is_string(slurp(root .. "/" .. words[3]), where)
              end
            elseif prog == "sudo" then
              -- Debian packages to install: the ones the Makefile, .ci/run or the specs name too
              assert.same({ "apt-get", "install", "-y" }, { words[2], words[3], words[4] }, where)
              local known = makefile .. (slurp(root .. "/.ci/run") or "")
              for i = 5, #words do
                assert.is_truthy(known:find(words[i], 1, true), where .. ": " .. words[i] .. " is installed nowhere else")
              end
            else
              error(where .. ": the spec does not know the command " .. tostring(prog))
            end
          end
        end
      end
    end
    assert.is_true(checked >= 10)
  end)

  it("its test command is what CI runs", function()
    local ci = slurp(root .. "/.ci/run")
    assert.is_string(ci, ".ci/run is missing")
    assert.matches("\nmake test\n", ci, 1, true)
    local _, status = sh("test -x .ci/run && bash -n .ci/run")
    assert.equal(0, status)
    assert.matches("apt%-get install %-y [^\n]*luajit libluajit%-5%.1%-dev lua%-busted", ci:gsub("%$pkgs", "luajit libluajit-5.1-dev lua-busted"))
  end)
end)

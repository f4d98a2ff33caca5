-- Requiring cuscan under a Lua that is not LuaJIT (Debian's lua5.1, say, which `busted` runs by
-- default) fails with one cuscan: line that says LuaJIT is needed and how to run busted under it,
-- rather than a syntax error from deep inside the module.
local H = require("spec.helpers")

local root, q = H.root, H.quote

-- The stock Lua interpreters installed here (LuaJIT excluded).
local function stock_luas()
  local found, seen = {}, {}
  for _, name in ipairs({ "lua5.1", "lua5.2", "lua5.3", "lua5.4", "lua" }) do
    local out, status = H.shell("command -v " .. name .. " && " .. name .. " -v")
    if status == 0 and not out:match("LuaJIT") then
      local path = out:match("^([^\n]+)")
      local real = H.shell("readlink -f " .. q(path)):gsub("%s+$", "")
      if not seen[real] then
        seen[real] = true
        found[#found + 1] = name
      end
    end
  end
  return found
end

local LUAS = stock_luas()
local PATH = ("%s/lua/?.lua;%s/lua/?/init.lua;;"):format(root, root)
local ENV = ("env LUA_PATH=%s LUA_PATH_5_2=%s LUA_PATH_5_3=%s LUA_PATH_5_4=%s"):format(q(PATH), q(PATH), q(PATH),
                                                                                      q(PATH))

-- The lines of out that carry a cuscan: message.
local function cuscan_lines(out)
  local lines = {}
  for line in out:gmatch("[^\n]+") do
    if line:find("cuscan:", 1, true) then lines[#lines + 1] = line end
  end
  return lines
end

local function assert_says_luajit(out, name)
  local lines = cuscan_lines(out)
  assert.equal(1, #lines, name .. ":\n" .. out)
  local line = lines[1]
  assert.matches("cuscan: LuaJIT is needed (this is Lua 5.", line, 1, true)
  assert.matches("`busted --lua=luajit`", line, 1, true)
  assert.matches('.busted file beside the specs saying lua = "luajit"', line, 1, true)
  assert.not_matches("syntax error", out, 1, true)
  assert.not_matches("malformed number", out, 1, true)
end

describe("under a Lua that is not LuaJIT", function()
  it("require('cuscan') and require('cuscan.assertions') fail with one cuscan: line", function()
    if #LUAS == 0 then
      pending("no Lua other than LuaJIT is installed (Debian's lua5.1; .ci/run installs it)")
      return
    end
    for _, name in ipairs(LUAS) do
      for _, mod in ipairs({ "cuscan", "cuscan.assertions" }) do
        local out, status = H.shell(("cd / && %s %s -e %s"):format(ENV, name, q("require('" .. mod .. "')")))
        assert.is_not.equal(0, status, name .. " " .. mod .. ":\n" .. out)
        assert_says_luajit(out, name .. " " .. mod)
      end
    end
  end)

  it("busted run by it without a .busted file reports the same line for a spec that requires cuscan", function()
    if #LUAS == 0 then
      pending("no Lua other than LuaJIT is installed (Debian's lua5.1; .ci/run installs it)")
      return
    end
    local busted = H.shell("command -v busted"):gsub("%s+$", "")
    local dir = H.shell("mktemp -d"):gsub("%s+$", "")
    local f = assert(io.open(dir .. "/uses_cuscan_spec.lua", "w"))
    f:write('local cs = require("cuscan")\n',
            'describe("a spec", function() it("scans", function() assert.equal(3, cs.tensor({1, 2}):sum()) end) end)\n')
    f:close()
    local ran = 0
    for _, name in ipairs(LUAS) do
      local out, status = H.shell(("cd %s && %s %s %s uses_cuscan_spec.lua"):format(q(dir), ENV, name, q(busted)))
      -- busted's own modules may be installed for some of these interpreters only
      if not out:match("module 'busted%.runner' not found") then
        ran = ran + 1
        assert.is_not.equal(0, status, name .. ":\n" .. out)
        assert_says_luajit(out, name)
      end
    end
    H.shell("rm -rf " .. q(dir))
    if ran == 0 then pending("busted does not run under " .. table.concat(LUAS, ", ")) end
  end)
end)

-- A busted output handler for cuscan's specs.
--   While running: one mark per test ("." passed, "F" failed, "E" error, "s" skipped), 80 a line.
--   At the end: every skipped test with its reason, every failure and error in full (name, place,
--   message, traceback without busted's own frames), the time taken, and as the very last line
--       N passed, N failed[, N skipped]
--   where errors (in tests, describe blocks or files) count as failed and ", N skipped" appears
--   when any test was pending. busted's exit status is non-zero when anything failed.
local pretty = require("pl.pretty")

return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.base")()
  local write, flush = io.write, io.flush
  local column = 0

  local function mark(ch)
    if options.deferPrint then return end
    write(ch)
    column = column + 1
    if column >= 80 then
      write("\n")
      column = 0
    end
    flush()
  end

  local function message_text(msg)
    if type(msg) == "string" then return msg end
    if msg == nil then return "(no message)" end
    if type(msg) == "table" and getmetatable(msg) and getmetatable(msg).__tostring then return tostring(msg) end
    return pretty.write(msg)
  end

  local function place(item)
    local trace = (item.element and item.element.trace) or item.trace
    if trace and trace.short_src then
      return trace.short_src .. ":" .. tostring(trace.currentline)
    end
    return "?"
  end

  local function indent(text, prefix)
    return prefix .. tostring(text):gsub("\n", "\n" .. prefix)
  end

  -- the traceback without the frames of busted, luassert and penlight
  local function traceback(item)
    local tb = item.trace and item.trace.traceback
    if type(tb) ~= "string" then return nil end
    local keep = {}
    for line in tb:gmatch("[^\n]+") do
      if not (line:find("/busted/", 1, true) or line:find("/luassert/", 1, true) or line:find("/pl/", 1, true) or
              line:find("[C]: in function 'xpcall'", 1, true) or line:find("/usr/bin/busted", 1, true) or
              line:match("^%s*%[C%]: at 0x") or line:match("^%s*%[C%]: in %?$")) then
        keep[#keep + 1] = line
      end
    end
    if #keep <= 1 then return nil end
    return table.concat(keep, "\n")
  end

  handler.testEnd = function(element, parent, status)
    if status == "success" then mark(".")
    elseif status == "pending" then mark("s")
    elseif status == "failure" then mark("F")
    else mark("E") end
    return nil, true
  end

  handler.error = function(element)
    if element.descriptor ~= "it" then mark("E") end
    return nil, true
  end

  handler.suiteEnd = function()
    if column > 0 then write("\n") end
    column = 0
    local pendings, failures, errors = handler.pendings, handler.failures, handler.errors

    if #pendings > 0 then
      write(("\nSkipped (%d):\n"):format(#pendings))
      for _, p in ipairs(pendings) do
        write(("  - %s  [%s]\n"):format(p.name, place(p)))
        if p.message ~= nil then write(indent(message_text(p.message), "      ") .. "\n") end
      end
    end

    local function report(title, list)
      if #list == 0 then return end
      write(("\n%s (%d):\n"):format(title, #list))
      for i, f in ipairs(list) do
        local name = f.name
        if name == nil or name == "" then
          name = "(" .. tostring(f.element and f.element.descriptor or "suite") .. ")"
        end
        write(("\n%d) %s\n"):format(i, name))
        write(("   at %s\n"):format(place(f)))
        if f.randomseed then write(("   random seed: %s\n"):format(tostring(f.randomseed))) end
        write(indent(message_text(f.message), "   ") .. "\n")
        local tb = traceback(f)
        if tb then write(indent(tb, "   ") .. "\n") end
      end
    end
    report("Failures", failures)
    report("Errors", errors)

    local passed = handler.successesCount
    local failed = handler.failuresCount + handler.errorsCount
    local skipped = handler.pendingsCount
    write(("\nFinished in %.2f s\n"):format(handler.getDuration()))
    local line = ("%d passed, %d failed"):format(passed, failed)
    if skipped > 0 then line = line .. (", %d skipped"):format(skipped) end
    write(line .. "\n")
    flush()
    return nil, true
  end

  -- busted exits with the count of failures, which the shell sees modulo 256 (256 failures would
  -- read as success): exit with 1 instead whenever anything failed.
  handler.exit = function()
    if handler.failuresCount + handler.errorsCount > 0 then
      io.stdout:flush()
      os.exit(1)
    end
    return nil, true
  end

  busted.subscribe({ "exit" }, handler.exit)
  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  busted.subscribe({ "error", "file" }, handler.error)
  busted.subscribe({ "failure", "file" }, handler.error)
  busted.subscribe({ "error", "describe" }, handler.error)
  busted.subscribe({ "failure", "describe" }, handler.error)

  return handler
end

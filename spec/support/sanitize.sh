#!/bin/sh
# make sanitize: every spec file under compute-sanitizer memcheck and racecheck, the files run side
# by side (JOBS at once); one log per tool and file in $LOGS. Prints each run's spec summary and the
# sanitizer's own summary, then the totals; exits non-zero when any run found an error or a failure.
# SPECS="spec/a_spec.lua ..." runs those files only. Left out: specs tagged #slow (minutes of device
# time unsanitized) and #nosanitize (a deliberate fault; terminal timing that a slow start breaks).
# Host backtraces are off (--show-backtrace device): the sanitizer records one at every kernel
# launch, and unwinding through LuaJIT's frames aborts the process.
LOGS=${LOGS:-build/sanitize}
JOBS=${JOBS:-4}
TIMEOUT=${TIMEOUT:-3000}
BUSTED=$(command -v busted) || { echo "cuscan: busted not found"; exit 1; }
command -v compute-sanitizer >/dev/null || { echo "cuscan: compute-sanitizer not found (part of the CUDA Toolkit)"; exit 1; }
rm -rf "$LOGS" && mkdir -p "$LOGS" || exit 1

# one run: tool and spec file
run_one='
  logs=$0 limit=$1 busted=$2 tool=$3 file=$4
  log="$logs/$tool.$(basename "$file" .lua).log"
  timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 --show-backtrace device \
    luajit "$busted" --output=spec/support/summary.lua --exclude-tags=slow,nosanitize "$file" >"$log" 2>&1
  echo "$?" >"$log.status"'
# memory_spec fills most of the device on purpose, which would starve the other runs (the sanitizers
# need device memory of their own), so it runs alone after them. The longest files go first.
alone="spec/memory_spec.lua"
heavy="spec/scan_spec.lua spec/fuzz_spec.lua spec/determinism_spec.lua spec/cuda_spec.lua spec/special_values_spec.lua"
rest=$(ls spec/*_spec.lua examples/spec/*_spec.lua | grep -vxF "$(echo "$heavy $alone" | tr ' ' '\n')")
if [ -n "$SPECS" ]; then heavy=""; rest=$(echo "$SPECS" | tr ' ' '\n' | grep -vxF "$alone"); fi
for f in $heavy $rest; do
  for tool in memcheck racecheck; do echo "$tool $f"; done
done | xargs -P "$JOBS" -L 1 sh -c "$run_one" "$LOGS" "$TIMEOUT" "$BUSTED"
case " $SPECS " in "  "|*" $alone "*) ;; *) alone="" ;; esac
[ -z "$alone" ] || for tool in memcheck racecheck; do echo "$tool $alone"; done | xargs -L 1 sh -c "$run_one" "$LOGS" "$TIMEOUT" "$BUSTED"

bad=0
for log in "$LOGS"/*.log; do
  st=$(cat "$log.status" 2>/dev/null || echo "?")
  specs=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
  case "$st" in 0) verdict=ok ;; 99) verdict="SANITIZER ERRORS" ;; 124) verdict="TIMED OUT" ;; *) verdict="exit $st" ;; esac
  [ "$st" = 0 ] || bad=$((bad + 1))
  printf '%-48s %-34s %-44s %s\n' "$(basename "$log" .log)" "${specs:-no summary}" "${summary:-no sanitizer summary}" "$verdict"
done
grep -hE '^[0-9]+ passed, [0-9]+ failed' "$LOGS"/*.log | awk -F'[ ,]+' '
  { p += $1; f += $3; s += ($5 == "" ? 0 : $5) } END { printf "specs under the sanitizers: %d passed, %d failed, %d skipped\n", p, f, s }'
if [ "$bad" -ne 0 ]; then echo "cuscan: $bad sanitizer runs failed (logs in $LOGS)"; exit 1; fi
echo "every run clean (logs in $LOGS)"

#!/usr/bin/env bash
# Runs one libFuzzer target for ctest (label `fuzz`) and keeps what a log
# reader needs: libFuzzer's progress goes to a log file beside the
# artifacts; on success the final statistics are printed, on a finding the
# crashing input (base64, to replay it anywhere: `base64 -d > crash` and run
# the target on it) and then the sanitizer's report, last, where a
# truncated log still shows it.
#
#   run-fuzzer.sh LOG TARGET [libFuzzer arguments...]
set -uo pipefail
log=$1
shift
"$@" > "$log" 2>&1
status=$?
if [ "$status" -eq 0 ]; then
  grep -E '^(stat::|Done|INFO: seed corpus)' "$log"
  exit 0
fi
echo "fuzz target failed (exit $status); full log: $log"
artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -n 1)
if [ -n "$artifact" ] && [ -f "$artifact" ]; then
  echo "crashing input ($(wc -c < "$artifact") bytes, base64), $artifact:"
  base64 -w 120 "$artifact"
fi
echo "report:"
# From the first sanitizer or libFuzzer error to the end, without the
# checker's warnings and the shadow-byte legend.
awk '/^==[0-9]+==ERROR|runtime error:|^==[0-9]+== ERROR: libFuzzer|deadly signal|^ALARM/ { on = 1 }
     on && !/^Warning: Checker/ && !/^Shadow byte legend/ && !/^  [A-Z][a-zA-Z ]+: *[0-9a-f ]+$/ && !/^ *=?>?0x[0-9a-f]+:/ { print }' "$log" |
  head -n 80
exit "$status"

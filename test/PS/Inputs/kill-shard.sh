# kill -9 of one PS server mid-training, and of a server while it writes a
# checkpoint.
#   kill-shard.sh SCRATCH HETERPS_RUN PLAN
set -euo pipefail
T=$1 RUN=$2 PLAN=$3
source "$(dirname "$0")/cluster.sh"
train() { timeout 120 "$RUN" "$PLAN" --epochs=1000 --log-every=0 --seed=5 "$@"; }

# 1. Kill shard 1 after the first checkpoint. The worker must fail with
# UNAVAILABLE within its deadline (2 s), not hang.
start_server a 0 2 "$T/ps"
start_server b 1 2 "$T/ps"
train --steps=1000000 --checkpoint-every=50 --save="$T/ckA" --ps-deadline=2 \
  --ps="$(addresses a b)" >"$T/trainA.log" 2>"$T/trainA.err" &
worker=$!
for _ in $(seq 600); do
  [ -f "$T/ckA/MANIFEST" ] && break
  sleep 0.05
done
[ -f "$T/ckA/MANIFEST" ] || { echo "no checkpoint written"; cat "$T/trainA.err"; exit 1; }
kill -9 "${server_pid[b]}"
killed_at=$(date +%s%N)
status=0
wait "$worker" || status=$?
elapsed_ms=$((($(date +%s%N) - killed_at) / 1000000))
echo "worker exit status $status after $([ $elapsed_ms -lt 10000 ] && echo 'under 10 s' || echo "$elapsed_ms ms")"
grep -o 'pushing to table [0-9]* on PS server 1 .*: UNAVAILABLE: no answer within the deadline of 2' "$T/trainA.err" ||
  grep -o 'pulling table [0-9]* on PS server 1 .*: UNAVAILABLE: no answer within the deadline of 2' "$T/trainA.err" ||
  cat "$T/trainA.err"
step=$(sed -n 's/^step //p' "$T/ckA/MANIFEST")
echo "the last checkpoint is at step $step"

# Restart shard 1 from its checkpoint and resume the worker from the same
# one: every server rolls back to it, and 60 more steps are taken.
start_server b 1 2 "$T/ps" --restore=latest
train --load="$T/ckA" --steps=60 --ps="$(addresses a b)" --save="$T/endA" \
  --export-tables="$T/endA/tables" | grep -E '^(loaded|saved)'
# The same resume on a service that never lost a server.
start_server c 0 2 "$T/ps"
start_server d 1 2 "$T/ps"
train --load="$T/ckA" --steps=60 --ps="$(addresses c d)" --save="$T/endB" \
  --export-tables="$T/endB/tables" | grep -E '^(loaded|saved)'
for f in "$T"/endB/tables/*.pb "$T"/endB/param.*.pb; do
  cmp "$f" "$T/endA/${f#"$T"/endB/}"
done
echo "after the kill and without it: $(ls "$T"/endB/tables | wc -l) tables and $(ls "$T"/endB/param.*.pb | wc -l) parameters identical"

# 2. A server killed while writing its second checkpoint: the previous one
# stays loadable, by the restarted server and by the worker.
start_server e 0 1 "$T/ps2" --crash-in-checkpoint=2
status=0
train --steps=200 --checkpoint-every=50 --save="$T/ckC" --ps-deadline=2 \
  --ps="$(addresses e)" >"$T/trainC.log" 2>"$T/trainC.err" || status=$?
echo "worker exit status $status"
grep -o 'writing checkpoint .ckC.step-100.[0-9a-f]*. on PS server 0 .*: UNAVAILABLE' "$T/trainC.err" || cat "$T/trainC.err"
echo "worker checkpoint at step $(sed -n 's/^step //p' "$T/ckC/MANIFEST")"
start_server e 0 1 "$T/ps2" --restore=latest
sed -n 's/^.* INFO PS server [0-9]*: \(restored\) .*\/\(ckC[^ ]*\) \(at step [0-9]*\).*/\1 \2 \3/p' "$T/server.e.log"
train --load="$T/ckC" --steps=10 --ps="$(addresses e)" | grep -E '^loaded'

# W worker processes push a known gradient R times to a service of two
# server processes (SGD, learning rate 1): every key must end at exactly
# its initial value minus W * R * g.
#   exact-sums.sh SCRATCH HETERPS_RUN HETERPS_PS
set -euo pipefail
T=$1 RUN=$2 PS=$3
source "$(dirname "$0")/cluster.sh"
start_server a 0 2 "$T/ckpt"
start_server b 1 2 "$T/ckpt"
ps=$(addresses a b)
"$PS" create-table --ps="$ps" --id=1 --dim=4 --init=constant:10 \
  --optimizer=sgd --learning-rate=1
# 4 workers x 20 pushes x 0.25 = 20 off the initial 10; the key ranges
# overlap, so keys 0..2999 (stride 7) get all four workers.
for w in 0 1 2 3; do
  timeout 60 "$PS" push-constant --ps="$ps" --table=1 --keys=0:3000:7 \
    --value=0.25 --repeat=20 >"$T/worker.$w.log" &
done
wait_status=0
for job in $(jobs -p); do
  case " ${server_pid[*]} " in *" $job "*) continue ;; esac
  wait "$job" || wait_status=1
done
[ $wait_status -eq 0 ] || { echo "a worker failed"; cat "$T"/worker.*.log; exit 1; }
cat "$T/worker.0.log"
timeout 60 "$PS" pull --ps="$ps" --table=1 --keys=0:3000:7 --expect=-10
timeout 60 "$PS" info --ps="$ps"
# SIGTERM shuts a server down gracefully: exit status 0.
kill -TERM "${server_pid[a]}"
status=0
wait "${server_pid[a]}" || status=$?
unset 'server_pid[a]'
echo "server a exit status $status"
tail -n 1 "$T/server.a.log"

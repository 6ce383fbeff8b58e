# Servers that are safe to start and restart: a port in use is refused,
# numbers out of range are refused, checkpoint names stay inside
# --checkpoint-dir, old checkpoints are deleted beyond --keep-checkpoints,
# and --restore=auto restores the newest or starts empty.
#   serve-safety.sh SCRATCH HETERPS_RUN HETERPS_PS
set -uo pipefail
T=$1 RUN=$2 PS=$3
source "$(dirname "$0")/cluster.sh"

start_server a 0 1 "$T/ck" --restore=auto --keep-checkpoints=2
echo "--- a second server on the same port"
"$RUN" serve --listen="127.0.0.1:${server_port[a]}" 2>&1 | grep -v ' grpc '
echo "exit status ${PIPESTATUS[0]}"
echo "--- checkpoints"
for name in one two three four; do
  "$PS" checkpoint "$name" --ps="$(addresses a)" 2>&1
  sleep 0.01
done
ls "$T/ck"
echo "--- the server's log"
grep -o "checkpoint '[a-z]*' at step 0: [0-9].*" "$T/server.a.log" |
  sed 's/[0-9]* files, [0-9]* bytes/F files, B bytes/'
mkdir -p "$T/outside"
ln -s "$T/outside" "$T/ck/link"
for name in latest auto . ../up "$(printf 'tab\there')" link/x; do
  "$PS" checkpoint "$name" --ps="$(addresses a)" 2>&1
  echo "exit status $?"
done
ls "$T/outside" | wc -l
echo "--- a directory of someone else's"
mkdir -p "$T/ck/mydata"
echo keep >"$T/ck/mydata/notes.txt"
"$PS" checkpoint mydata --ps="$(addresses a)" 2>&1
echo "exit status $?"
cat "$T/ck/mydata/notes.txt"
stop_servers
echo "--- restart"
start_server b 0 1 "$T/ck" --restore=auto
cat "$T/server.b.log"
start_server c 0 1 "$T/empty" --restore=auto
cat "$T/server.c.log"

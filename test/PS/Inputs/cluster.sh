# Starts and stops PS servers (heterps-run serve) on 127.0.0.1 for the PS
# tests. Source it after setting T (a scratch directory) and RUN (the
# heterps-run binary). Every server picks a free port and writes it to a
# port file; all servers are killed when the sourcing script exits.
declare -A server_pid server_port

# start_server NAME INDEX COUNT CHECKPOINT_DIR [serve options...]
start_server() {
  local name=$1 index=$2 count=$3 dir=$4
  shift 4
  rm -f "$T/port.$name"
  "$RUN" serve --listen=127.0.0.1:0 --shard-index="$index" \
    --shard-count="$count" --checkpoint-dir="$dir" \
    --port-file="$T/port.$name" "$@" >"$T/server.$name.log" 2>&1 &
  server_pid[$name]=$!
  for _ in $(seq 200); do
    [ -s "$T/port.$name" ] && break
    kill -0 "${server_pid[$name]}" 2>/dev/null || break
    sleep 0.05
  done
  if [ ! -s "$T/port.$name" ]; then
    echo "server $name did not start:"
    cat "$T/server.$name.log"
    exit 1
  fi
  server_port[$name]=$(cat "$T/port.$name")
}

# addresses NAME... -> "127.0.0.1:P1,127.0.0.1:P2"
addresses() {
  local out="" name
  for name in "$@"; do
    out="$out${out:+,}127.0.0.1:${server_port[$name]}"
  done
  echo "$out"
}

stop_servers() {
  local name
  for name in "${!server_pid[@]}"; do
    kill "${server_pid[$name]}" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap stop_servers EXIT

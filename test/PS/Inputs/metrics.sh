# A server's metrics after a known load: a table of 100 rows pushed 3 times
# and pulled once, and a call that fails.
#   metrics.sh SCRATCH HETERPS_RUN HETERPS_PS
set -uo pipefail
T=$1 RUN=$2 PS=$3
source "$(dirname "$0")/cluster.sh"
start_server m 0 1 "$T/ck"
ADDR=$(addresses m)
"$PS" create-table --id=1 --dim=4 --learning-rate=1 --ps="$ADDR" >/dev/null
"$PS" push-constant --table=1 --keys=0:100 --value=0.5 --repeat=3 --ps="$ADDR" >/dev/null
# `--x v` works as `--x=v` does.
"$PS" pull --table 1 --keys 0:100 --expect -1.5 --ps "$ADDR"
"$PS" pull --table=7 --keys=0:1 --ps="$ADDR" >/dev/null 2>&1
"$PS" metrics --ps="$ADDR" > "$T/metrics.txt"
echo "metrics exit status $?"
grep -E '^heterps_ps_(rows|learning_rate|pushes_applied_total|pushed_keys_total|pulled_keys_total|pull_buffer_bytes)|_count\{shard="0",method="Push"\}|errors_total\{shard="0",method="DescribeTable"\}|bucket\{shard="0",method="Push",le="\+Inf"\}' "$T/metrics.txt"
# Every sample line is NAME{LABELS} VALUE with a shard label, every family
# has one HELP and one TYPE with its samples after them, and histogram
# buckets never decrease.
check_format() {
/usr/bin/python3 - "$1" <<'PY'
import re, sys
families, typed, last, shards = [], set(), {}, {}
ok = True
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        name = line.split()[2]
        if name in typed:
            ok = False
            print("TYPE twice:", name)
        typed.add(name)
        families.append(name)
        continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)\{shard="([0-9]+)"(,[^}]*)?\} (\S+)', line)
    if not m:
        ok = False
        print("bad line:", line)
        continue
    float(m.group(4))
    base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
    family = base if base in typed else m.group(1)
    if not families or families[-1] != family:
        ok = False
        print("not after its TYPE:", line)
    shards.setdefault(family, set()).add(m.group(2))
    if m.group(1).endswith("_bucket"):
        key = m.group(2) + re.sub(r',le="[^"]*"', "", m.group(3) or "")
        value = float(m.group(4))
        if value < last.get(key, 0):
            ok = False
            print("bucket decreases:", line)
        last[key] = value
print("format", "OK" if ok else "FAIL")
print("shards of heterps_ps_pulled_keys_total:",
      " ".join(sorted(shards.get("heterps_ps_pulled_keys_total", []))))
PY
}
check_format "$T/metrics.txt"
# Rows as 16-bit floats on the wire: the values pulled are the same where
# they are representable.
"$PS" push-constant --table=1 --keys=0:100 --value=0.25 --ps-wire=f16 --ps="$ADDR" >/dev/null
"$PS" pull --table=1 --keys=0:100 --expect=-1.75 --ps-wire=bf16 --ps="$ADDR"
echo "bf16 pull exit status $?"
"$PS" pull --table=1 --keys=0:100 --expect=-1.75 --ps-wire=f16 --ps="$ADDR"
echo "f16 pull exit status $?"
"$PS" pull --table=1 --keys=3:2:10 --ps="$ADDR"
"$PS" pull --table=1 --keys=0:1 --ps-wire=fp8 --ps="$ADDR" 2>&1
# Ids that would wrap are refused before they reach a server.
"$PS" pull --table=4294967295 --keys=0:1 --ps="$ADDR" 2>&1
"$PS" pull --table=1 --keys=18446744073709551615:1 --ps="$ADDR" 2>&1
"$PS" push-constant --table=1 --keys=0:1 --value=1e39 --ps="$ADDR" 2>&1
"$PS" create-table --id=2 --dim=2 --table-cache-rows=5 --ps="$ADDR" 2>&1
# create-table's hyper-parameters: heterps-opt's defaults, and only those
# the optimizer reads.
"$PS" create-table --id=3 --dim=2 --optimizer=adagrad --momentum=0.5 --ps="$ADDR" 2>&1
"$PS" create-table --id=4 --dim=2 --optimizer=momentum --weight-decay=0.01 --ps="$ADDR" >/dev/null
"$PS" create-table --id=5 --dim=2 --optimizer=adagrad --ps="$ADDR" >/dev/null
"$PS" info --ps="$ADDR" | grep -A1 "table [45] " | grep optimizer
"$PS" create-table --id=4294967295 --dim=2 --ps="$ADDR" 2>&1
"$PS" info --ps-deadline=nan --ps="$ADDR" 2>&1
"$PS" info --ps 2>&1
stop_servers
echo "--- two servers: one exposition"
start_server m0 0 2 "$T/ck2"
start_server m1 1 2 "$T/ck2"
ADDR=$(addresses m0 m1)
"$PS" create-table --id=1 --dim=4 --ps="$ADDR" >/dev/null
"$PS" pull --table=1 --keys=0:100 --ps="$ADDR" >/dev/null
"$PS" metrics --ps="$ADDR" > "$T/metrics2.txt"
echo "metrics exit status $?"
check_format "$T/metrics2.txt"
grep -c '^# TYPE heterps_ps_rows ' "$T/metrics2.txt"
exit 0

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
grep -E '^heterps_ps_(rows|learning_rate|pushes_applied_total|pushed_keys_total|pulled_keys_total|pull_buffer_bytes)|_count\{method="Push"\}|errors_total\{method="DescribeTable"\}|bucket\{method="Push",le="\+Inf"\}' "$T/metrics.txt"
# Every sample line is NAME{LABELS} VALUE or NAME VALUE, every family has
# HELP and TYPE, and histogram buckets never decrease.
/usr/bin/python3 - "$T/metrics.txt" <<'PY'
import re, sys
families, last = set(), {}
ok = True
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# server"):
        continue
    if line.startswith("# TYPE "):
        families.add(line.split()[2])
        continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{[^}]*\})? (\S+)', line)
    if not m:
        ok = False
        print("bad line:", line)
        continue
    float(m.group(3))
    base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
    if base not in families and m.group(1) not in families:
        ok = False
        print("no TYPE for", m.group(1))
    if m.group(1).endswith("_bucket"):
        key = re.sub(r',le="[^"]*"', "", m.group(2))
        value = float(m.group(3))
        if value < last.get(key, 0):
            ok = False
            print("bucket decreases:", line)
        last[key] = value
print("format", "OK" if ok else "FAIL")
PY
# Rows as 16-bit floats on the wire: the values pulled are the same where
# they are representable.
"$PS" push-constant --table=1 --keys=0:100 --value=0.25 --ps-wire=f16 --ps="$ADDR" >/dev/null
"$PS" pull --table=1 --keys=0:100 --expect=-1.75 --ps-wire=bf16 --ps="$ADDR"
echo "bf16 pull exit status $?"
"$PS" pull --table=1 --keys=0:100 --expect=-1.75 --ps-wire=f16 --ps="$ADDR"
echo "f16 pull exit status $?"
"$PS" pull --table=1 --keys=0:1 --ps-wire=fp8 --ps="$ADDR" 2>&1
# Ids that would wrap are refused before they reach a server.
"$PS" pull --table=4294967295 --keys=0:1 --ps="$ADDR" 2>&1
"$PS" create-table --id=4294967295 --dim=2 --ps="$ADDR" 2>&1
"$PS" info --ps-deadline=nan --ps="$ADDR" 2>&1
"$PS" info --ps 2>&1
exit 0

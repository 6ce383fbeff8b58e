# Two jobs saving to directories of one name keep their own PS checkpoints
# (the servers' checkpoint names carry a suffix of each save's own), and a
# resumed run takes its checkpoint's seed, which the servers' tables were
# created with; another seed is refused, naming both.
#   checkpoint-names.sh SCRATCH HETERPS_RUN PLAN
set -uo pipefail
T=$1 RUN=$2 PLAN=$3
source "$(dirname "$0")/cluster.sh"
start_server a 0 1 "$T/ps"
ADDR=$(addresses a)
for job in one two; do
  mkdir -p "$T/$job"
  "$RUN" "$PLAN" --steps=2 --log-every=0 --seed=3 --ps="$ADDR" \
    --save="$T/$job/run" 2>&1 | grep -E 'saved|error' | sed "s|$T/||"
done
ls "$T/ps" | sed 's/\.[0-9a-f]\{8\}$/.SUFFIX/'
one=$(sed -n 's/^entry ps-checkpoint //p' "$T/one/run/MANIFEST")
two=$(sed -n 's/^entry ps-checkpoint //p' "$T/two/run/MANIFEST")
[ -d "$T/ps/$one" ] && [ -d "$T/ps/$two" ] && [ "$one" != "$two" ] &&
  echo "each job's MANIFEST names its own"
echo "--- a resumed run takes the checkpoint's seed"
"$RUN" "$PLAN" --steps=1 --log-every=0 --ps="$ADDR" --load="$T/one/run" 2>&1 |
  grep -E '^training|error' | sed 's/.* on synthetic/training on synthetic/'
"$RUN" "$PLAN" --steps=1 --log-every=0 --ps="$ADDR" --load="$T/one/run" \
  --seed=1 2>&1 | sed "s|$T/||"
echo "exit status ${PIPESTATUS[0]}"

# The CTR model trained against two external PS server processes gives the
# same losses, step by step, and the same tables as the embedded default.
#   train-external.sh SCRATCH HETERPS_RUN PLAN
set -euo pipefail
T=$1 RUN=$2 PLAN=$3
source "$(dirname "$0")/cluster.sh"
losses() { sed -n 's/^step \([0-9]*\) .* loss \([0-9.]*\) .*/\1 \2/p' "$1"; }

timeout 120 "$RUN" "$PLAN" --steps=40 --log-every=1 --seed=3 \
  --export-tables="$T/embedded" >"$T/embedded.log"
start_server a 0 2 "$T/ckpt"
start_server b 1 2 "$T/ckpt"
timeout 120 "$RUN" "$PLAN" --steps=40 --log-every=1 --seed=3 \
  --ps="$(addresses a b)" --export-tables="$T/external" >"$T/external.log"
losses "$T/embedded.log" >"$T/embedded.losses"
losses "$T/external.log" >"$T/external.losses"
echo "steps compared: $(wc -l <"$T/external.losses")"
diff "$T/embedded.losses" "$T/external.losses" && echo "losses identical"
for f in "$T"/embedded/*.pb; do
  cmp "$f" "$T/external/$(basename "$f")"
done
echo "tables identical: $(ls "$T/embedded" | wc -l) files"

# The RocksDB tier changes where rows live, not what training computes:
# 64 rows in memory per table (one per virtual shard), the rest in RocksDB.
timeout 120 "$RUN" "$PLAN" --steps=40 --log-every=1 --seed=3 \
  --table-storage=rocksdb --table-cache-rows=64 --rocksdb-dir="$T/rocksdb" \
  --export-tables="$T/rocksdb-tables" >"$T/rocksdb.log"
losses "$T/rocksdb.log" >"$T/rocksdb.losses"
diff "$T/embedded.losses" "$T/rocksdb.losses" && echo "rocksdb tier: losses identical"
for f in "$T"/embedded/*.pb; do
  cmp "$f" "$T/rocksdb-tables/$(basename "$f")"
done
echo "rocksdb tier: tables identical"

#!/bin/bash
# PS pull and push rows/s (dimensions 16 and 64, 1 to 4 client threads, 1k
# and 10k keys per request), to the embedded server and over loopback gRPC,
# each against a raw std::unordered_map loop over the same keys in the same
# process (the bound).
#
#   bench/ps/run.sh [build-dir] [heterps-ps-bench options: --seconds=1
#                    --dims=16,64 --threads=1,2,4 --keys=1000,10000
#                    --rows=200000 --modes=inproc,grpc --repeat=1]
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
# The build directory is the first argument unless it is an option.
build="$src/build"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
if [[ ! -x "$build/bin/heterps-ps-bench" ]]; then
  echo "error: $build/bin/heterps-ps-bench is not built" \
    "(ninja -C $build heterps-ps-bench)" >&2
  exit 1
fi
echo "load average at the start $(cut -d' ' -f1 /proc/loadavg)"
"$build/bin/heterps-ps-bench" "$@"
echo "load average at the end $(cut -d' ' -f1 /proc/loadavg)"

# Runs `mpirun -np N heterps-run PLAN --ps=<a server> [options]` the way a
# user does without launch: one PS server of the test's on 127.0.0.1, then
# mpirun, then the server is stopped. Prints the job's output and
# "job exit status S".
# usage: mpirun-job.sh SCRATCH HETERPS_RUN -np N PLAN [options...]
set -u
T=$1 RUN=$2
shift 2
source "$(dirname "$0")/../../PS/Inputs/cluster.sh"
start_server job 0 1 "$T/job-ps"
np_flag=$1 np=$2 plan=$3
shift 3
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
mpirun "$np_flag" "$np" --oversubscribe --bind-to none "${root[@]}" \
  "$RUN" "$plan" --ps="$(addresses job)" "$@"
echo "job exit status $?"

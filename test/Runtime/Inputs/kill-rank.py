"""Runs a command that starts an MPI job, waits for its output to show a
line with `--after` in it, kills the job's process of rank `--rank` with
SIGKILL, and prints the command's exit status and output (stdout and
stderr merged). The job must end on its own within `--timeout` seconds of
the kill; otherwise the whole process group is killed and 'HUNG' printed.

usage: kill-rank.py --rank R --after TEXT [--timeout S] -- COMMAND...
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time


def rank_pid(rank, root):
    """The process below `root` whose environment says it is `rank`."""
    want = b"OMPI_COMM_WORLD_RANK=%d" % rank
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(entry))
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except OSError:
            pass
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    job = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    lines = []
    seen = threading.Event()

    def read():
        for line in job.stdout:
            text = line.decode(errors="replace")
            lines.append(text)
            if args.after in text:
                seen.set()
    reader = threading.Thread(target=read)
    reader.start()
    if not seen.wait(args.timeout):
        os.killpg(job.pid, signal.SIGKILL)
        reader.join()
        print("NEVER SAW %r" % args.after)
        sys.stdout.write("".join(lines))
        return 1
    pid = None
    for _ in range(100):
        pid = rank_pid(args.rank, job.pid)
        if pid:
            break
        time.sleep(0.05)
    if not pid:
        os.killpg(job.pid, signal.SIGKILL)
        print("NO RANK %d" % args.rank)
        return 1
    os.kill(pid, signal.SIGKILL)
    print("killed rank %d" % args.rank)
    try:
        status = job.wait(args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        print("HUNG")
        status = None
    reader.join()
    print("exit status %s" % status)
    sys.stdout.write("".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

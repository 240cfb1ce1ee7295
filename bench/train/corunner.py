"""Busy cores for the training benchmark: one spinning process pinned to each CPU, and how much
CPU those spinners took while a run went on.

Where the spinners live decides what "busy" means on Linux with autogroup scheduling
(/proc/sys/kernel/sched_autogroup_enabled = 1, the default of most distributions): the CPU is
shared fairly between sessions first, then between the threads of each session.

  busy      the spinners run in sessions of their own, as another user's job or a service
            would: each weighs as much as the whole training job (all of its ranks together).
  busy-job  the spinners run in the job's own session, as a data loader's worker processes
            do: each weighs as much as one rank.

Without autogroup (or inside one cgroup) the two are the same. As a wrapper, this module
starts the busy-job spinners inside the run's session and then runs the launcher:

    python3 bench/train/corunner.py --cpus 0,1 -- braidrun -n 4 ...

and prints "corunner-cores: X" (the CPUs' worth the spinners took during the run) on stderr.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import List

SPIN = "while True: pass"
CORES_PREFIX = "corunner-cores: "


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CoRunner:
    """One busy process per CPU at the ranks' priority, pinned to it; in sessions of their own
    (own_session=True, the `busy` load) or in the caller's (`busy-job`)."""

    def __init__(self, cpus: List[int], own_session: bool = True):
        self.procs = []
        for cpu in cpus:
            proc = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=own_session)
            os.sched_setaffinity(proc.pid, {cpu})
            self.procs.append(proc)
        self.mark()

    def mark(self) -> None:
        """Starts a new measuring interval for cores()."""
        self.mark_time = time.monotonic()
        self.mark_cpu = self.cpu()

    def cpu(self) -> float:
        total = 0.0
        for proc in self.procs:
            try:
                total += cpu_seconds(proc.pid)
            except OSError:
                pass
        return total

    def cores(self) -> float:
        """CPUs' worth the spinners took since mark(): what the job did not get."""
        elapsed = time.monotonic() - self.mark_time
        return (self.cpu() - self.mark_cpu) / elapsed if elapsed > 0 else 0.0

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        self.procs = []


def parse_cores(stderr: str):
    """The figure the wrapper printed, or None."""
    for line in reversed(stderr.splitlines()):
        if line.startswith(CORES_PREFIX):
            return float(line[len(CORES_PREFIX):])
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", required=True, help="comma-separated CPU numbers, one spinner each")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- LAUNCHER ARGS...")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no command to run")
    corunner = CoRunner([int(c) for c in args.cpus.split(",")], own_session=False)
    try:
        rc = subprocess.call(command)
        print(f"{CORES_PREFIX}{corunner.cores():.3f}", file=sys.stderr, flush=True)
    finally:
        corunner.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""The conditions a comparison measures under: background load and rank pinning.

Users run collectives beside other work, on cores the scheduler shares. --load names what else
runs while each benchmark invocation runs:

  idle   nothing started by compare.py (other work on the machine still shows in the CPU line)
  busy   one busy co-runner per CPU this process may use, at the ranks' priority, unpinned
  busy1  exactly one busy co-runner

A co-runner is a Python process spinning in a loop. The co-runners start before an invocation
(they have all reported running before the launcher starts) and are killed right after it, so
the stream probe and the other libraries' invocations are not loaded by them.

--pinning names how the ranks are placed: `unpinned` (the scheduler decides, for every library)
or `pinned` (rank i on the i-th allowed CPU modulo their number, for every library).
"""

import os
import signal
import subprocess
import sys
from typing import List, Tuple

LOADS = ("idle", "busy", "busy1")
PINNINGS = ("unpinned", "pinned")
DEFAULT_CONDITION = ("idle", "unpinned")  # (load, pinning)

# The spinner writes one byte once it runs, so the caller knows it is running before timing.
_SPIN = "import sys\nsys.stdout.write('r')\nsys.stdout.flush()\nwhile True:\n    pass\n"


def allowed_cpus() -> List[int]:
    """The CPUs this process may run on, in order (rank i is pinned to the (i mod n)-th)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def co_runner_count(load: str, cpus: int) -> int:
    """Busy co-runners for a load condition on a machine with `cpus` usable CPUs."""
    if load == "idle":
        return 0
    if load == "busy":
        return max(1, cpus)
    if load == "busy1":
        return 1
    raise ValueError(f"unknown load {load} ({', '.join(LOADS)})")


def conditions(loads: List[str], pinnings: List[str]) -> List[Tuple[str, str]]:
    """(load, pinning) pairs in table order: per pinning, the loads as given."""
    return [(load, pinning) for pinning in pinnings for load in loads]


def label(load: str, pinning: str) -> str:
    return f"{load}, {pinning}"


class CoRunners:
    """Context manager: `count` spinning processes for the duration of one invocation."""

    def __init__(self, count: int):
        self.count = count
        self.procs: List[subprocess.Popen] = []

    def __enter__(self) -> "CoRunners":
        try:
            for _ in range(self.count):
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-c", _SPIN], stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True))
            for proc in self.procs:
                proc.stdout.read(1)  # running
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            proc.wait()
            if proc.stdout:
                proc.stdout.close()
        self.procs = []

#!/usr/bin/env python3
"""Training as users run it: the DDP step over Braid, gloo and MPI, and GradSync's programs,
idle and beside a busy co-runner, with ranks pinned and unpinned.

For every round (--repeat), condition (load x pinning) and rank count, the DDP backends run one
after another (the first one rotating from round to round), so a change of the machine's load
hits all of them alike; then GradSync's train_digits (every round) and gradsync_bench (first
round). A DDP run times both shapes (per-rank batches) in the same processes and reports, per
shape, its median step and the median of the same step under a no-op comm hook; the tables
show medians over the runs, the communication share of the step and gloo/braid, mpi/braid.
See bench/train/README.md.

    tools/train-bench                    # the full run (about 15 minutes on 2 cores)
    tools/train-bench --quick            # one round, fewer steps (4-5 minutes)
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
sys.path.insert(0, HERE)

import runners  # noqa: E402  (bench/compare: run_command, CpuMeter)
from corunner import CoRunner, parse_cores  # noqa: E402
import train_report  # noqa: E402

BACKENDS = ("braid", "gloo", "gloo-view", "mpi")
PROGRAMS = ("ddp", "train_digits", "gradsync_bench")
# idle; busy: a spinner per CPU in a session of its own; busy-job: in the job's session
# (bench/train/corunner.py says what the difference is under autogroup scheduling).
LOADS = ("idle", "busy", "busy-job")
# examples/ddp/bench_ddp.py's large MLP: 12.6 M parameters, 48 MiB of gradients.
LARGE = "1024,2048,2048,2048,1024,10"
# Why each backend cannot run here (JSON: backend -> reason or null), in one interpreter start.
PROBE = """
import json
why = dict.fromkeys(("braid", "gloo", "gloo-view", "mpi"))
def check(backends, what, statement):
    try:
        exec(statement)
    except Exception as e:
        for b in backends:
            why[b] = why[b] or f"{what}: {type(e).__name__}: {e}"
check(("braid", "gloo", "gloo-view", "mpi"), "import torch.distributed",
      "import torch.distributed")
check(("braid",), "import braid.torch", "import braid.torch")
# torch's own MPI backend, else ddp_rank.py's mpi4py comm hook.
check(("mpi",), "import mpi4py (this torch has no MPI backend)",
      "import torch.distributed as d\\nif not d.is_mpi_available(): import mpi4py")
print(json.dumps(why))
"""


def csv_list(text: str) -> List[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Method, columns and files: bench/train/README.md.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--build-dir", default="build", help="CMake build folder")
    p.add_argument("--np", default="2,4", help="rank counts, comma separated")
    p.add_argument("--backends", default=",".join(BACKENDS), help="DDP backends")
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="what runs: ddp, train_digits, gradsync_bench")
    p.add_argument("--load", default="idle,busy,busy-job",
                   help="idle, busy and/or busy-job: one spinning process per CPU (at this "
                   "tool's priority, normally nice 0; each pinned to its CPU), in sessions of "
                   "their own (busy: started before and stopped after the condition's runs) or "
                   "in each run's session (busy-job); see bench/train/corunner.py")
    p.add_argument("--pinning", default="unpinned,pinned",
                   help="unpinned (as torchrun), and/or pinned: rank i bound to CPU i "
                   "(round robin when ranks outnumber CPUs)")
    p.add_argument("--shapes", default="comm,compute", help="comm-bound and/or compute-bound")
    p.add_argument("--widths", default=LARGE, help="the DDP model's layer widths")
    p.add_argument("--comm-batch", type=int, default=2, help="per-rank batch of the comm shape")
    p.add_argument("--compute-batch", type=int, default=8,
                   help="per-rank batch of the compute shape")
    p.add_argument("--repeat", type=int, default=3, help="rounds (runs per backend and case)")
    p.add_argument("--steps", type=int, default=4,
                   help="timed DDP steps of each shape and kind per run")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed DDP steps of each shape and kind per run")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--bucket-mb", type=float, default=25, help="DDP's bucket_cap_mb")
    p.add_argument("--digits-epochs", type=int, default=3, help="train_digits --epochs")
    p.add_argument("--gradsync-args", default="--batch 4 --steps 2 --rounds 2 --warmup 1",
                   help="gradsync_bench's arguments")
    p.add_argument("--quick", action="store_true",
                   help="sets: 1 round, 2 steps after 1 warm-up, train_digits 2 epochs, gradsync_bench "
                   "--steps 1 --rounds 2")
    p.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    p.add_argument("--json", metavar="FILE", help="write every number and command to FILE")
    p.add_argument("--csv", metavar="FILE", help="write the summary rows to FILE")
    args = p.parse_args(argv)
    if args.quick:
        args.repeat, args.steps, args.warmup, args.digits_epochs = 1, 2, 1, 2
        args.gradsync_args = "--batch 4 --steps 1 --rounds 2 --warmup 1"
    args.np = [int(n) for n in csv_list(args.np)]
    for name, allowed in (("backends", BACKENDS), ("programs", PROGRAMS),
                          ("load", LOADS), ("pinning", ("unpinned", "pinned")),
                          ("shapes", ("comm", "compute"))):
        values = csv_list(getattr(args, name))
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            p.error(f"--{name} {','.join(bad) or '(empty)'}: choose from {', '.join(allowed)}")
        setattr(args, name, values)
    if any(n < 1 for n in args.np) or args.repeat < 1 or args.steps < 1:
        p.error("--np, --repeat and --steps must be positive")
    args.build_dir = os.path.abspath(args.build_dir)
    return args


def python_package_dir() -> str:
    """The build tree's package for this interpreter's torch: build/python (PyTorch 1.x) or
    build/python-torch2 (2.x), each with the extension built against that torch."""
    try:
        major = int(importlib.metadata.version("torch").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        major = 1
    return "python-torch2" if major >= 2 else "python"


class Bench:
    """Runs every case in interleaved order and keeps every run (command, output, numbers)."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.cpus = sorted(os.sched_getaffinity(0))
        self.python = sys.executable
        self.braidrun = os.path.join(args.build_dir, "bin", "braidrun")
        self.runs: List[dict] = []
        self.blocks: List[dict] = []
        self.load, self.corunner = "idle", None
        self.skipped = {}  # backend or program -> why it cannot run here
        self.env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
                        PYTHONPATH=os.pathsep.join(
                            p for p in (os.path.join(args.build_dir, python_package_dir()),
                                        os.environ.get("PYTHONPATH")) if p))
        self.check_prerequisites()

    def check_prerequisites(self) -> None:
        a = self.args
        for program, path in (("ddp", self.braidrun),
                              ("train_digits", os.path.join(a.build_dir, "bin", "train_digits")),
                              ("gradsync_bench",
                               os.path.join(a.build_dir, "bench", "gradsync_bench"))):
            if not os.access(path, os.X_OK):
                self.skipped[program] = f"{path} is not built"
        if not os.access(self.braidrun, os.X_OK):  # every program's launcher
            self.skipped.update(dict.fromkeys(PROGRAMS, f"{self.braidrun} is not built"))
        if "ddp" in self.skipped or "ddp" not in a.programs:
            return
        # One interpreter start for every check: importing torch takes a second or two.
        done = subprocess.run([self.python, "-c", PROBE], env=self.env, capture_output=True,
                              text=True)
        try:
            reasons = json.loads(done.stdout)
        except ValueError:
            reasons = {b: f"{self.python} failed: {done.stderr.strip()[-300:]}" for b in BACKENDS}
        if not shutil.which("mpirun"):
            reasons["mpi"] = "mpirun not found (apt-get install openmpi-bin)"
        for backend, why in reasons.items():
            if why and backend in a.backends:
                self.skipped[backend] = (f"{why} ({self.python}; tools/setup-frameworks installs "
                                         "what is missing)")

    # Commands -----------------------------------------------------------------------------

    def launch(self, nranks: int, pinned: bool, program: List[str], mpi: bool = False) -> List[str]:
        """The launcher line: braidrun (torchrun's environment, pins nothing) or mpirun with its
        own binding off; pinned runs go through pin_rank.py, so every launcher pins alike."""
        if mpi:
            argv = ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", str(nranks),
                    "-x", "MASTER_ADDR=127.0.0.1", "-x", f"MASTER_PORT={free_port()}",
                    "-x", "OMP_NUM_THREADS", "-x", "PYTHONPATH"]
            # As a user would launch it: mpirun refuses more ranks than cores without the flag,
            # and the flag also changes how Open MPI waits (see bench/train/README.md).
            if nranks > physical_cores(self.cpus):
                argv[1:1] = ["--oversubscribe"]
        else:
            argv = [self.braidrun, "-n", str(nranks), "--timeout", str(int(self.args.timeout))]
        if pinned:
            argv += [self.python, os.path.join(HERE, "pin_rank.py"),
                     "--cpus", ",".join(map(str, self.cpus)), "--"]
        if self.load == "busy-job":  # the spinners start inside the run's own session
            argv[:0] = [self.python, os.path.join(HERE, "corunner.py"),
                        "--cpus", ",".join(map(str, self.cpus)), "--"]
        return argv + program

    def ddp_command(self, backend: str, nranks: int, pinned: bool) -> List[str]:
        a = self.args
        batches = sorted({train_report.shape_batch(a, shape) for shape in a.shapes})
        program = [self.python, os.path.join(HERE, "ddp_rank.py"), "--backend", backend,
                   "--widths", a.widths, "--batches", ",".join(map(str, batches)),
                   "--warmup", str(a.warmup),
                   "--steps", str(a.steps), "--threads", str(a.threads),
                   "--bucket-mb", str(a.bucket_mb)]
        return self.launch(nranks, pinned, program, mpi=backend == "mpi")

    def digits_command(self, nranks: int, pinned: bool) -> List[str]:
        program = [os.path.join(self.args.build_dir, "bin", "train_digits"),
                   "--epochs", str(self.args.digits_epochs)]
        return self.launch(nranks, pinned, program)

    def gradsync_command(self, nranks: int, pinned: bool) -> List[str]:
        program = [os.path.join(self.args.build_dir, "bench", "gradsync_bench")]
        return self.launch(nranks, pinned, program + self.args.gradsync_args.split())

    # Running -------------------------------------------------------------------------------

    def conditions(self):
        for load in self.args.load:
            for pinning in self.args.pinning:
                yield load, pinning

    def run(self) -> None:
        a = self.args
        backends = [b for b in a.backends if b not in self.skipped and "ddp" not in self.skipped]
        for what, why in self.skipped.items():
            if what in a.backends or what in a.programs:
                print(f"# skipped {what}: {why}", file=sys.stderr, flush=True)
        for round_ in range(a.repeat):
            for load, pinning in self.conditions():
                self.load = load
                meter = runners.CpuMeter()
                self.corunner = CoRunner(self.cpus) if load == "busy" else None
                try:
                    self.run_condition(round_, load, pinning, backends)
                finally:
                    if self.corunner:
                        self.corunner.stop()
                self.blocks.append({"round": round_, "load": load, "pinning": pinning,
                                    "cpu_others_percent": meter.others_percent(),
                                    "loadavg": os.getloadavg()})
                print(f"# round {round_ + 1}/{a.repeat}, {load}, {pinning} done; CPU used by "
                      f"other processes meanwhile: {train_report.others(self.blocks[-1])}",
                      file=sys.stderr, flush=True)

    def run_condition(self, round_: int, load: str, pinning: str, backends: List[str]) -> None:
        a, pinned = self.args, pinning == "pinned"
        case = {"round": round_, "load": load, "pinning": pinning}
        for nranks in a.np:
            if "ddp" in a.programs:
                shift = round_ % max(1, len(backends))
                for backend in backends[shift:] + backends[:shift]:
                    self.one(dict(case, program="ddp", nranks=nranks, backend=backend),
                             self.ddp_command(backend, nranks, pinned), train_report.parse_ddp)
            if "train_digits" in a.programs and "train_digits" not in self.skipped:
                self.one(dict(case, program="train_digits", nranks=nranks),
                         self.digits_command(nranks, pinned), train_report.parse_digits)
            if ("gradsync_bench" in a.programs and "gradsync_bench" not in self.skipped
                    and round_ == 0):
                self.one(dict(case, program="gradsync_bench", nranks=nranks),
                         self.gradsync_command(nranks, pinned), train_report.parse_gradsync)

    def one(self, case: dict, argv: List[str], parse) -> None:
        if self.corunner:
            self.corunner.mark()
        result = runners.run_command(argv, self.env, self.args.timeout + 30)
        # The CPUs' worth the spinners took meanwhile: what the scheduler did not give the job.
        cores = self.corunner.cores() if self.corunner else parse_cores(result.stderr)
        parsed, why = parse(result.stdout) if result.returncode == 0 else (None, None)
        if result.returncode != 0 or parsed is None:
            status = ("timed out" if result.returncode is None
                      else f"exit status {result.returncode}")
            why = why or status
            tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-4:]
            print(f"# FAILED {describe(case)}: {why}\n#   command: {result.command}"
                  + "".join(f"\n#   {line}" for line in tail), file=sys.stderr, flush=True)
        self.runs.append(dict(case, command=result.command, returncode=result.returncode,
                              seconds=round(result.seconds, 3), result=parsed,
                              corunner_cores=None if cores is None else round(cores, 3),
                              error=None if parsed else why))


def physical_cores(cpus: List[int]) -> int:
    """Cores among these CPUs (hyperthreads of one core count once): Open MPI's slots."""
    cores = set()
    for cpu in cpus:
        topology = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(topology + "physical_package_id") as f, open(topology + "core_id") as g:
                cores.add((f.read().strip(), g.read().strip()))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return len(cores)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe(case: dict) -> str:
    parts = [case["program"], case.get("backend"),
             f"{case['nranks']} ranks", case["load"], case["pinning"], f"round {case['round'] + 1}"]
    return ", ".join(p for p in parts if p)


def read_first_line(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return None


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_at_start = os.getloadavg()
    bench = Bench(args)
    bench.run()
    summary = train_report.summarize(bench.runs, args)
    host = {"name": platform.node(), "cpus": bench.cpus, "python": sys.executable,
            "nice": os.nice(0), "loadavg_at_start": load_at_start,
            # 1: CPU is shared between sessions first (what separates busy from busy-job).
            "sched_autogroup": read_first_line("/proc/sys/kernel/sched_autogroup_enabled"),
            # Settings the ranks inherit that change how they run.
            "environment": {k: v for k, v in sorted(os.environ.items())
                            if k.startswith(("BRAID_", "NCCL_", "OMP_", "OMPI_MCA_"))},
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}
    print(train_report.format_report(summary, bench.blocks, bench.skipped, host, args), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arguments": vars(args), "host": host, "skipped": bench.skipped,
                       "conditions": bench.blocks, "summary": summary, "runs": bench.runs},
                      f, indent=1)
        print(f"json: {args.json}")
    if args.csv:
        train_report.write_csv(args.csv, summary)
        print(f"csv: {args.csv}")
    failed = [r for r in bench.runs if r["result"] is None]
    measured = any(r["result"] is not None for r in bench.runs)
    return 0 if measured and not failed else (1 if measured else 2)


if __name__ == "__main__":
    sys.exit(main())

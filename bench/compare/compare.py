#!/usr/bin/env python3
"""Side-by-side comparison of Braid's collectives with Open MPI (and Gloo's allreduce) on this
machine.

One invocation runs, for every requested collective, rank count and transport, Braid's
nccl-tests style program (all_reduce_perf, reduce_perf, ..., sendrecv_perf) and the peers'
benchmarks (mpi_perf --collective C: MPI_Allreduce, MPI_Reduce, ..., MPI_Sendrecv) (same sizes, ranks, type and op, same nccl-tests output), repeats the
whole sweep --repeat times with the libraries interleaved inside each repeat, and reports the
median busbw per size with the min-max spread, Braid's ratio to each peer, the latency at the
smallest size and, for shared memory, the fraction of the memory bound reached. A short memory
bandwidth probe before each repeat records how loud the shared machine was.

--load and --pinning add conditions (load.py), run interleaved inside each repeat as well: other
busy processes beside the ranks, ranks pinned to cores; the report then has one table per
condition and the load tables of load_report.py. --peers oneccl adds Intel oneCCL's allreduce.

    bench/compare/compare.py --build-dir build --np 2,4 --transport shm,tcp --repeat 5

See README.md next to this file for the method and the columns.
"""

import argparse
import datetime
import json
import os
import platform
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import load  # noqa: E402
import overview  # noqa: E402
import perf_output  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402

MODE_NAMES = {"out-of-place": "out-of-place", "oop": "out-of-place",
              "in-place": "in-place", "ip": "in-place"}


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    for suffix, shift in (("K", 10), ("M", 20), ("G", 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * (1 << shift))
    return int(text)


def csv_list(text: str) -> List[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Compare Braid's allreduce with Open MPI and Gloo (see README.md).")
    p.add_argument("--build-dir", default="build", help="CMake build folder (default: build)")
    p.add_argument("--np", default="2,4", help="rank counts, comma separated (default 2,4)")
    p.add_argument("--transport", default="shm,tcp", help="shm, tcp, ucx (Braid's UCX net plugin and Open MPI's "
                   "UCX pml, UCX over loopback TCP), comma separated (default shm,tcp)")
    p.add_argument("--peers", default="mpi,gloo", help="peers besides Braid (default mpi,gloo; braid-reg: Braid "
                   "with registered buffers, -R 1; oneccl: Intel oneCCL, allreduce float sum)")
    p.add_argument("--oneccl-bench", default=None,
                   help="oneCCL benchmark for --peers oneccl (default: $ONECCL_ALLREDUCE_BENCH, "
                   "else what the peers' oneccl_build.sh builds: "
                   + " or ".join(runners.ONECCL_BENCH_PATHS[-1:]) + ")")
    p.add_argument("--load", default="idle",
                   help="conditions run interleaved in each repeat, comma separated: idle, busy "
                   "(one busy co-runner per CPU), busy1 (one busy co-runner) (default idle)")
    p.add_argument("--pinning", default="unpinned",
                   help="rank placement, comma separated: unpinned, pinned (rank i on CPU i mod "
                   "the CPUs, every library) (default unpinned)")
    p.add_argument("--collective", default="allreduce",
                   help="collectives, comma separated, or 'all': " + ",".join(runners.COLLECTIVES)
                   + " (default allreduce; Gloo runs allreduce only)")
    p.add_argument("--min-bytes", default="8", help="smallest size, K/M/G suffixes (default 8)")
    p.add_argument("--max-bytes", default="64M", help="largest size (default 64M)")
    p.add_argument("--sizes", help="explicit sizes instead of the doubling sweep, e.g. 8,64K,1M;"
                   " one invocation per size")
    p.add_argument("--quick", action="store_true", help="sizes 8,64K,1M,64M only")
    p.add_argument("--repeat", type=int, default=5, help="repeats of the whole sweep (default 5)")
    p.add_argument("--iters", type=int, help="timed calls per size for every size (default: "
                   "by size band, see runners.SIZE_BANDS)")
    p.add_argument("--dtype", default="float", help="nccl-tests type name (default float)")
    p.add_argument("--op", default="sum", help="nccl-tests op name (default sum)")
    p.add_argument("--mode", default="out-of-place", choices=sorted(MODE_NAMES),
                   help="which columns the tables use (default out-of-place)")
    p.add_argument("--check", default="first", choices=("first", "all", "none"),
                   help="check results (-c 1) in the first repeat only (default: checking a "
                   "64 MiB result costs more than timing it, and does not change the timing), "
                   "in all repeats, or never")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds one invocation may take before it is ended (default 600)")
    p.add_argument("--json", metavar="FILE", help="write every number and command to FILE")
    p.add_argument("--plot", metavar="DIR", help="write busbw-vs-size PNGs to DIR")
    p.add_argument("--nccl", action="store_true",
                   help="add NVIDIA NCCL (nccl-tests all_reduce_perf on GPUs) when a GPU exists")
    p.add_argument("--nccl-tests", default=os.environ.get("NCCL_TESTS_ALL_REDUCE_PERF"),
                   help="NVIDIA nccl-tests all_reduce_perf binary for --nccl")
    p.add_argument("--no-probe", action="store_true", help="skip the memory bandwidth probe")
    args = p.parse_args(argv)
    args.mode = MODE_NAMES[args.mode]
    args.np = [int(n) for n in csv_list(args.np)]
    args.transport = csv_list(args.transport)
    args.peers = csv_list(args.peers)
    args.collective = (list(runners.COLLECTIVES) if args.collective == "all"
                       else csv_list(args.collective))
    for coll in args.collective:
        if coll not in runners.COLLECTIVES:
            p.error(f"unknown collective {coll} ({', '.join(runners.COLLECTIVES)})")
    for t in args.transport:
        if t not in runners.TRANSPORTS:
            p.error(f"unknown transport {t} ({', '.join(runners.TRANSPORTS)})")
    for peer in args.peers:
        if peer not in ("mpi", "gloo", "braid-reg", "oneccl"):
            p.error(f"unknown peer {peer} (mpi, gloo, braid-reg, oneccl)")
    args.oneccl_bench = args.oneccl_bench or runners.default_oneccl_bench()
    args.load, args.pinning = csv_list(args.load), csv_list(args.pinning)
    for name, values, known in (("load", args.load, load.LOADS),
                                ("pinning", args.pinning, load.PINNINGS)):
        if not values:
            p.error(f"--{name} needs at least one of {', '.join(known)}")
        for value in values:
            if value not in known:
                p.error(f"unknown {name} {value} ({', '.join(known)})")
    if any(n < 1 for n in args.np) or args.repeat < 1:
        p.error("--np values and --repeat must be positive")
    args.sizes = [parse_size(s) for s in csv_list(args.sizes)] if args.sizes else None
    if args.quick:
        args.sizes = [8, 64 << 10, 1 << 20, 64 << 20]
    args.min_bytes, args.max_bytes = parse_size(args.min_bytes), parse_size(args.max_bytes)
    return args


class Comparison:
    """Runs the repeats and keeps every parsed result, failure and probe."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.programs = runners.Programs.in_build(os.path.abspath(args.build_dir),
                                                 getattr(args, "oneccl_bench", None))
        self.libraries = ["braid"] + args.peers
        self.bands = runners.plan_bands(args.min_bytes, args.max_bytes, args.sizes, args.iters)
        self.cpus = load.allowed_cpus()
        # (load, pinning) pairs; the default, (idle, unpinned), alone keeps the plain report.
        self.conditions = load.conditions(getattr(args, "load", ["idle"]),
                                          getattr(args, "pinning", ["unpinned"]))
        # (collective, transport, nranks, library, load, pinning) -> one {size: Row} per
        # repeat with rows
        self.samples: Dict[report.Key, List[Dict[int, perf_output.Row]]] = {}
        self.failures: List[dict] = []
        self.runs: List[dict] = []
        self.probes: List[dict] = []
        self.cpu_others: List[Optional[float]] = []
        self.skip: Dict[tuple, str] = {}  # (library, collective) -> why it cannot run
        self.nccl_note: Optional[str] = None
        self.skipped: List[str] = []  # optional peers left out, with why (oneCCL)

    def perf_args(self, band: runners.Band, repeat: int = 0) -> List[str]:
        # -a 3: every library reports the slowest rank's average call time.
        check = self.args.check == "all" or (self.args.check == "first" and repeat == 0)
        return band.args() + ["-a", "3", "-c", "1" if check else "0",
                              "-d", self.args.dtype, "-o", self.args.op]

    def cases(self):
        """(collective, transport, nranks, libraries) in table order."""
        for coll in self.args.collective:
            for transport in self.args.transport:
                for nranks in self.args.np:
                    libs = [lib for lib in self.libraries
                            if transport in runners.TRANSPORTS_OF[lib]
                            and coll in runners.COLLECTIVES_OF[lib]]
                    yield coll, transport, nranks, libs

    def bands_for(self, coll: str, nranks: int) -> List[runners.Band]:
        """The invocations of one case. The per-rank collectives round each rank's block down to
        16 bytes, so a requested size below 16 B x n would run empty: it is raised to that."""
        if coll not in perf_output.PER_RANK_COLLECTIVES:
            return self.bands
        least = 16 * nranks
        if self.args.sizes:
            sizes = [max(s, least) for s in self.args.sizes]
            return runners.plan_bands(0, 0, sizes, self.args.iters)
        first = self.args.min_bytes
        while first < least:
            first *= 2
        return runners.plan_bands(first, max(first, self.args.max_bytes), None, self.args.iters)

    def run(self) -> None:
        # oneCCL comes from outside this project (the peers' oneccl_build.sh): without it the
        # comparison runs without it, and says so.
        if "oneccl" in self.libraries:
            why = self.programs.missing("oneccl")
            if not why and (self.args.dtype, self.args.op) not in runners.ONECCL_TYPES:
                why = f"its benchmark times float sum only, not {self.args.dtype} {self.args.op}"
            if why:
                self.skipped.append(f"oneCCL: skipped: {why}")
                print(f"# {self.skipped[-1]}", file=sys.stderr, flush=True)
                self.libraries.remove("oneccl")
        for lib in self.libraries:
            for coll in self.args.collective:
                if coll not in runners.COLLECTIVES_OF[lib]:
                    continue
                why = self.programs.missing(lib, coll)
                if why:
                    self.skip[(lib, coll)] = why
                    self.fail(None, None, None, lib, why)
        for repeat in range(self.args.repeat):
            meter = runners.CpuMeter()
            self.probe(repeat)
            # Interleaved: every library runs once per case and condition per repeat, and the
            # library (and the condition) that goes first rotates, so slow drifts of the machine
            # do not favour one of them.
            for coll, transport, nranks, libs in self.cases():
                turn = repeat % len(self.conditions)
                for condition in self.conditions[turn:] + self.conditions[:turn]:
                    shift = repeat % len(libs)
                    for lib in libs[shift:] + libs[:shift]:
                        if (lib, coll) not in self.skip:
                            self.run_case(repeat, coll, transport, nranks, lib, condition)
            self.cpu_others.append(meter.others_percent())
            print(f"# repeat {repeat + 1}/{self.args.repeat} done; CPU used by other processes "
                  f"meanwhile: {overview.fmt_percent(self.cpu_others[-1])}", file=sys.stderr,
                  flush=True)
        if self.args.nccl:
            self.run_nccl()

    def probe(self, repeat: int) -> None:
        if self.args.no_probe:
            return
        values, why = runners.run_stream_probe(self.programs)
        if why:
            self.fail(repeat, None, None, "stream_probe", why)
        self.probes.append({"repeat": repeat, "gbps": {f"{k} {t}": v
                                                       for (k, t), v in values.items()}})

    def run_case(self, repeat: int, coll: str, transport: str, nranks: int, lib: str,
                 condition=load.DEFAULT_CONDITION) -> None:
        load_name, pinning = condition
        co_runners = load.co_runner_count(load_name, len(self.cpus))
        rows: Dict[int, perf_output.Row] = {}
        for band in self.bands_for(coll, nranks):
            with load.CoRunners(co_runners):
                result = runners.run_library(lib, transport, nranks,
                                             self.perf_args(band, repeat), self.programs,
                                             self.args.timeout, collective=coll,
                                             pinning=pinning, cpus=self.cpus)
            parsed = perf_output.parse(result.stdout, nranks, coll)
            self.runs.append({"repeat": repeat, "collective": coll, "transport": transport,
                              "nranks": nranks, "library": lib, "load": load_name,
                              "pinning": pinning, "co_runners": co_runners,
                              "command": result.command,
                              "returncode": result.returncode, "seconds": result.seconds,
                              "rows": len(parsed.rows)})
            requested = band_sizes(band)
            # The per-rank collectives print n x (size / n rounded down to 16 B): their rows are
            # matched to the requested sizes by position.
            if coll in perf_output.PER_RANK_COLLECTIVES and len(parsed.rows) == len(requested):
                by_size = dict(zip(requested, parsed.rows))
            else:
                by_size = {r.size: r for r in parsed.rows}
            expected, got = set(requested), set(by_size)
            if result.returncode != 0 or not expected <= got:
                self.fail(repeat, transport, nranks, f"{lib} {coll}",
                          describe_failure(result, expected, got), condition)
                if lib != "braid" and result.returncode == runners.EXIT_UNSUPPORTED:
                    self.skip[(lib, coll)] = "unsupported type/op"
            rows.update(by_size)
            if (lib, coll) in self.skip:
                break
        if rows:
            self.samples.setdefault((coll, transport, nranks, lib) + tuple(condition),
                                    []).append(rows)

    def run_nccl(self) -> None:
        gpus = runners.gpu_count()
        if gpus == 0:
            self.nccl_note = "NCCL: skipped: no GPU"
            return
        if not self.args.nccl_tests or not os.access(self.args.nccl_tests, os.X_OK):
            self.nccl_note = ("NCCL: skipped: give NVIDIA nccl-tests' all_reduce_perf with "
                              "--nccl-tests PATH")
            return
        notes = []
        for nranks in self.args.np:
            if nranks > gpus:
                notes.append(f"{nranks} ranks skipped ({gpus} GPU(s))")
                continue
            for repeat in range(self.args.repeat):
                rows = {}
                for band in self.bands:
                    result = runners.run_nccl_tests(self.args.nccl_tests, nranks,
                                                    self.perf_args(band, repeat),
                                                    self.args.timeout)
                    parsed = perf_output.parse(result.stdout, nranks)
                    if result.returncode != 0 or not parsed.rows:
                        self.fail(repeat, "gpu", nranks, "nccl",
                                  describe_failure(result, set(band_sizes(band)),
                                                   {r.size for r in parsed.rows}))
                    rows.update({r.size: r for r in parsed.rows})
                if rows:
                    self.samples.setdefault(("allreduce", "gpu", nranks, "nccl")
                                            + load.DEFAULT_CONDITION, []).append(rows)
        self.nccl_note = "NCCL (GPU buffers, one process, -g N): " + ("; ".join(notes) or "ran")

    def fail(self, repeat, transport, nranks, lib, message, condition=None) -> None:
        failure = {"repeat": repeat, "transport": transport, "nranks": nranks, "library": lib,
                   "message": message}
        label = None
        if condition is not None:
            failure["load"], failure["pinning"] = condition
            if self.conditions != [load.DEFAULT_CONDITION]:
                label = failure["condition"] = load.label(*condition)
        self.failures.append(failure)
        where = " ".join(str(x) for x in (lib, transport, f"{nranks} ranks" if nranks else None,
                                          label,
                                          f"repeat {repeat + 1}" if repeat is not None else None)
                         if x)
        print(f"# FAILED {where}: {message.splitlines()[0] if message else ''}",
              file=sys.stderr, flush=True)


def band_sizes(band: runners.Band) -> List[int]:
    sizes, size = [], band.first
    while size <= band.last:
        sizes.append(size)
        size *= 2
    return sizes


def describe_failure(result: runners.RunResult, expected, got) -> str:
    if result.returncode is None:
        status = f"timed out after {result.seconds:.0f} s"
    elif result.returncode != 0:
        status = f"exit status {result.returncode}"
    else:
        status = "exit status 0"
    missing = sorted(expected - got)
    text = status
    if missing:
        text += f"; no result for {', '.join(report.size_label(s) for s in missing[:6])}" + \
                (" ..." if len(missing) > 6 else "")
    text += f"\n  command: {result.command}"
    # The perf programs report some errors on stdout among the table's comment lines.
    notes = [line for line in result.stdout.splitlines()
             if line.strip() and not line.lstrip().startswith("#")
             and not line.split()[0].isdigit()]
    tail = "\n".join((notes[-3:] if result.returncode != 0 else [])
                     + result.stderr.strip().splitlines()[-5:])
    if tail:
        text += "\n  output: " + tail.replace("\n", "\n          ")
    return text


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    comparison = Comparison(args)
    comparison.run()
    summary = overview.print_report(comparison)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arguments": vars(args), "host": platform.node(), "cpus": os.cpu_count(),
                       "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
                       "command": " ".join(sys.argv),
                       "bands": [vars(b) for b in comparison.bands],
                       "probes": comparison.probes, "cpu_others_percent": comparison.cpu_others,
                       "summary": summary, "runs": comparison.runs,
                       "failures": comparison.failures, "nccl": comparison.nccl_note,
                       "skipped": comparison.skipped},
                      f, indent=1)
        print(f"json: {args.json}")
    measured = any(comparison.samples.values())
    return 0 if measured and not comparison.failures else (1 if measured else 2)


if __name__ == "__main__":
    sys.exit(main())

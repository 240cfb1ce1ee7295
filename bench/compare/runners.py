"""How each library's benchmark is started, and the machine probes taken around the runs.

Every library runs the same nccl-tests style program interface (-b -e -f -n -w -c -d -o) and
prints the same columns; only the launcher and the transport switches differ:

  Braid  braidrun -n N <collective>_perf ...      tcp: NCCL_SHM_DISABLE=1, NCCL_SOCKET_IFNAME=lo
  MPI    mpirun -np N mpi_perf --collective C ... tcp: --mca pml ob1 --mca btl self,tcp ...
  Gloo   N processes started here (rank/size/store in the environment), TCP on 127.0.0.1 only
  oneCCL mpirun -np N oneccl_allreduce_bench ...  shm: FI_PROVIDER=shm, tcp: FI_PROVIDER=tcp

Pinned (load.PINNINGS), rank i runs on the (i mod n)-th of the n CPUs this process may use:
braidrun --bind-to core (a taskset wrapper per rank when ranks outnumber the CPUs), mpirun
--map-by core --bind-to core. Unpinned, mpirun gets --bind-to none: Open MPI binds to cores by
default up to 2 ranks.

Each run gets its own process group, so a timeout ends the whole run (launcher and ranks) and
nothing else.
"""

import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Tuple

import load

# "braid-reg" is Braid with -R 1: buffers from ncclMemAlloc, registered with ncclCommRegister,
# which shared-memory AllReduce reads in place (ZeroCopy) from 1 MiB up.
LIBRARIES = ("braid", "braid-reg", "mpi", "gloo", "oneccl")
# The collectives compared: Braid's nccl-tests style program for each (bench/perf), run beside
# mpi_perf --collective NAME (MPI_Allreduce, MPI_Reduce, ..., MPI_Sendrecv). Gloo: allreduce only.
BRAID_PROGRAMS = {"allreduce": "all_reduce_perf", "reduce": "reduce_perf",
                  "broadcast": "broadcast_perf", "allgather": "all_gather_perf",
                  "reducescatter": "reduce_scatter_perf", "alltoall": "alltoall_perf",
                  "gather": "gather_perf", "scatter": "scatter_perf", "sendrecv": "sendrecv_perf"}
COLLECTIVES = tuple(BRAID_PROGRAMS)
COLLECTIVES_OF = {"braid": COLLECTIVES, "braid-reg": ("allreduce",), "mpi": COLLECTIVES,
                  "gloo": ("allreduce",), "oneccl": ("allreduce",)}
LIBRARY_TITLES = {"braid": "Braid", "braid-reg": "Braid -R", "mpi": "MPI", "gloo": "Gloo",
                  "oneccl": "oneCCL", "nccl": "NCCL"}
TRANSPORTS = ("shm", "tcp", "ucx")
# Gloo has TCP only; its numbers appear in the TCP tables alone. ucx: Braid through its UCX net
# plugin (transports/net/ucx), Open MPI through its UCX pml, both with UCX's TCP transport over
# loopback (UCX_TLS=tcp, UCX_NET_DEVICES=lo).
TRANSPORTS_OF = {"braid": TRANSPORTS, "braid-reg": ("shm",), "mpi": TRANSPORTS, "gloo": ("tcp",),
                 "oneccl": ("shm", "tcp")}
UCX_ENV = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"}
# The oneCCL benchmark (oneccl_build.sh of the peers' folder) times float sums only.
ONECCL_TYPES = (("float", "sum"),)
# Where oneccl_build.sh leaves it: the peers' folder, in this checkout's shared/ or the machine's.
ONECCL_BENCH_PATHS = (
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers",
                 "build", "oneccl_allreduce_bench"),
    "/work/shared/peers/build/oneccl_allreduce_bench")


def default_oneccl_bench() -> str:
    """$ONECCL_ALLREDUCE_BENCH, else the first of ONECCL_BENCH_PATHS that exists (else the
    last, which missing() then reports)."""
    if os.environ.get("ONECCL_ALLREDUCE_BENCH"):
        return os.environ["ONECCL_ALLREDUCE_BENCH"]
    for path in ONECCL_BENCH_PATHS:
        if os.access(path, os.X_OK):
            return os.path.normpath(path)
    return ONECCL_BENCH_PATHS[-1]

# Exit status the peer programs of this folder use for "this type/op is not supported by the
# library" (PERF_EXIT_UNSUPPORTED in perf_common.h).
EXIT_UNSUPPORTED = 69

# Timed calls per size band. The perf programs take one -n per invocation, so a sweep is split
# where the per-call time changes by orders of magnitude: many calls where a call takes
# microseconds (latency needs them), few where a call takes tens of milliseconds (a 64 MiB
# allreduce over loopback TCP with 4 ranks on 2 cores takes about 0.1 s). Up to 1 KiB a call
# takes about a microsecond on shared memory: 50 calls would time the first milliseconds after
# the ranks start, while the scheduler may still have two of them on one core (it spreads them
# within a few ms), so those sizes get 1000 calls after 200 warm-up calls, and sizes up to
# 64 KiB 50 warm-up calls for the same reason.
SIZE_BANDS = ((1 << 10, 1000, 200), (64 << 10, 100, 50), (4 << 20, 20, 2),
              (1 << 62, 5, 1))  # (up to bytes, -n, -w)


@dataclasses.dataclass
class Band:
    """One invocation of a perf program: sizes first..last doubling, with its iteration counts."""

    first: int
    last: int
    iters: int
    warmup: int

    def args(self) -> List[str]:
        return ["-b", str(self.first), "-e", str(self.last), "-f", "2", "-n", str(self.iters),
                "-w", str(self.warmup)]


def plan_bands(min_bytes: int, max_bytes: int, sizes: Optional[List[int]] = None,
               iters: Optional[int] = None) -> List[Band]:
    """Splits the doubling sweep min..max (or the explicit size list, one invocation per size)
    into invocations by SIZE_BANDS; iters, when given, applies to all sizes."""

    def counts(size):
        for limit, n, w in SIZE_BANDS:
            if size <= limit:
                return (iters, max(1, min(w, iters))) if iters else (n, w)
        return SIZE_BANDS[-1][1:]

    if sizes:
        return [Band(s, s, *counts(s)) for s in sorted(set(sizes))]
    bands: List[Band] = []
    size = min_bytes
    while size <= max_bytes:
        n, w = counts(size)
        if bands and (bands[-1].iters, bands[-1].warmup) == (n, w):
            bands[-1].last = size
        else:
            bands.append(Band(size, size, n, w))
        size *= 2
    return bands


@dataclasses.dataclass
class Programs:
    braidrun: str
    bench_dir: str
    mpi_perf: str
    gloo_allreduce_perf: str
    stream_probe: str
    mpirun: Optional[str]
    oneccl_bench: str = ""
    ucx_plugin: str = ""

    @staticmethod
    def in_build(build_dir: str, oneccl_bench: Optional[str] = None) -> "Programs":
        bench = os.path.join(build_dir, "bench")
        return Programs(
            braidrun=os.path.join(build_dir, "bin", "braidrun"),
            bench_dir=bench,
            mpi_perf=os.path.join(bench, "mpi_perf"),
            gloo_allreduce_perf=os.path.join(bench, "gloo_allreduce_perf"),
            stream_probe=os.path.join(bench, "stream_probe"),
            mpirun=shutil.which("mpirun"),
            oneccl_bench=oneccl_bench or default_oneccl_bench(),
            ucx_plugin=os.path.join(build_dir, "lib", "libnccl-net-ucx.so"))

    def braid_perf(self, collective: str = "allreduce") -> str:
        return os.path.join(self.bench_dir, BRAID_PROGRAMS[collective])

    @property
    def all_reduce_perf(self) -> str:
        return self.braid_perf("allreduce")

    def missing(self, library: str, collective: str = "allreduce") -> Optional[str]:
        """Why `library` cannot run `collective` here, or None."""
        needed = {"braid": [self.braidrun, self.braid_perf(collective)],
                  "braid-reg": [self.braidrun, self.braid_perf(collective)],
                  "mpi": [self.mpi_perf], "gloo": [self.gloo_allreduce_perf],
                  "oneccl": [self.oneccl_bench]}[library]
        for path in needed:
            if not os.access(path, os.X_OK):
                if library == "oneccl":
                    return f"{path} is not built (run oneccl_build.sh of the peers' folder, or " \
                           "give --oneccl-bench PATH or $ONECCL_ALLREDUCE_BENCH)"
                return f"{path} is not built (cmake --build <build> --target " \
                       f"{os.path.basename(path)})"
        if library in ("mpi", "oneccl") and not self.mpirun:
            return "mpirun not found (apt-get install openmpi-bin)"
        return None


@dataclasses.dataclass
class RunResult:
    command: str
    returncode: Optional[int]  # None on timeout
    stdout: str
    stderr: str
    seconds: float


def _read(path: str) -> str:
    with open(path, "r", errors="replace") as f:
        return f.read()


def _end_group(proc: subprocess.Popen) -> None:
    """Ends the process group this module started for one run (launcher and its ranks)."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_command(argv: List[str], env: Dict[str, str], timeout: float) -> RunResult:
    """Runs one launcher command; output goes through files so that no pipe can fill up."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc)
            rc = None
        except BaseException:  # Ctrl-C: the run's own session would not see it
            _end_group(proc)
            raise
        out.seek(0)
        err.seek(0)
        return RunResult(" ".join(argv), rc, out.read(), err.read(), time.monotonic() - start)


def run_gloo(nranks: int, argv: List[str], env: Dict[str, str], timeout: float,
             pin_cpus: Optional[List[int]] = None) -> RunResult:
    """Gloo's launcher: nranks processes with GLOO_PERF_RANK/SIZE and a fresh FileStore
    directory. Rank 0's stdout is the result; every rank's stderr is kept. When one rank fails
    the others would wait for it until their own timeout, so they are ended. With pin_cpus, rank
    i runs on CPU pin_cpus[i mod their number] (taskset)."""
    start = time.monotonic()
    store = tempfile.mkdtemp(prefix="gloo_perf_store.")
    logs = tempfile.mkdtemp(prefix="gloo_perf_logs.")
    procs = []
    try:
        for rank in range(nranks):
            rank_env = dict(env, GLOO_PERF_RANK=str(rank), GLOO_PERF_SIZE=str(nranks),
                            GLOO_PERF_STORE=store)
            pin = ["taskset", "-c", str(pin_cpus[rank % len(pin_cpus)])] if pin_cpus else []
            with open(os.path.join(logs, f"{rank}.out"), "w") as out, \
                    open(os.path.join(logs, f"{rank}.err"), "w") as err:
                procs.append(subprocess.Popen(pin + argv, stdout=out, stderr=err, env=rank_env,
                                              start_new_session=True))
        deadline = start + timeout
        first_failure, timed_out = None, False
        while True:
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            failed = [c for c in codes if c not in (None, 0)]
            if failed and first_failure is None:
                first_failure = (now, failed[0])
            if first_failure is not None and now - first_failure[0] > 2.0:
                break
            if now > deadline:
                timed_out = True
                break
            time.sleep(0.05)
        for p in procs:
            if p.poll() is None:
                _end_group(p)
        if timed_out:
            rc = None
        elif first_failure is not None:
            rc = first_failure[1]
        else:
            rc = next((p.returncode for p in procs if p.returncode != 0), 0)
        stderr = "".join(f"[rank {r}] {line}\n" for r in range(nranks)
                         for line in _read(os.path.join(logs, f"{r}.err")).splitlines())
        launcher = f"gloo launcher -n {nranks}{' pinned' if pin_cpus else ''}: "
        return RunResult(launcher + " ".join(argv), rc,
                         _read(os.path.join(logs, "0.out")), stderr, time.monotonic() - start)
    finally:
        for p in procs:
            if p.poll() is None:
                _end_group(p)
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


def mpirun_argv(mpirun: str, nranks: int, pinning: str, cpus: int) -> List[str]:
    """Open MPI's launcher up to -np: --oversubscribe only when the ranks outnumber the CPUs;
    pinned: rank i on core i (mod the cores), unpinned: --bind-to none, since Open MPI binds to
    cores by default up to 2 ranks."""
    over = nranks > cpus
    argv = [mpirun, "--allow-run-as-root"] + (["--oversubscribe"] if over else [])
    if pinning == "pinned":
        argv += ["--map-by", "core", "--bind-to", "core:overload-allowed" if over else "core"]
    else:
        argv += ["--bind-to", "none"]
    return argv + ["-np", str(nranks)]


def braidrun_argv(braidrun: str, nranks: int, pinning: str, cpus: List[int]) -> List[str]:
    """braidrun up to the program: pinned, --bind-to core (rank i on the i-th allowed CPU); with
    more ranks than CPUs, which braidrun refuses to bind, each rank is started through taskset on
    the (LOCAL_RANK mod n)-th CPU."""
    argv = [braidrun, "-n", str(nranks)]
    if pinning != "pinned":
        return argv
    if nranks <= len(cpus):
        return argv + ["--bind-to", "core"]
    cases = " ".join(f"{i}) cpu={cpu};;" for i, cpu in enumerate(cpus))
    script = f'case $((LOCAL_RANK % {len(cpus)})) in {cases} esac; exec taskset -c "$cpu" "$@"'
    return argv + ["--", "sh", "-c", script, "sh"]


def oneccl_args(perf_args: List[str]) -> List[str]:
    """The nccl-tests flags in the oneCCL benchmark's terms: -b -e -f -w -c as they are, -n N as
    exactly N timed calls (-n N -N N: its iteration range); -a (it always reports the slowest
    rank), -d and -o (float sum only) are dropped."""
    out: List[str] = []
    for flag, value in zip(perf_args[::2], perf_args[1::2]):
        if flag in ("-b", "-e", "-f", "-w", "-c"):
            out += [flag, value]
        elif flag == "-n":
            out += ["-n", value, "-N", value]
    return out


def oneccl_env(env: Dict[str, str], transport: str, nranks: int, cpus: int) -> Dict[str, str]:
    """libfabric's shm or tcp provider (the peers' README, section oneCCL); without worker
    threads while every rank has a core (its workers would share the cores with the callers),
    yielding workers beyond. Tuning variables already set in the environment are kept."""
    env = dict(env)
    env["FI_PROVIDER"] = "shm" if transport == "shm" else "tcp"
    env["CCL_ATL_SHM"] = "1" if transport == "shm" else "0"
    for name in ("CCL_KVS_IFACE", "FI_TCP_IFACE", "FI_SOCKETS_IFACE"):
        env.setdefault(name, "lo")
    if not any(name in env for name in ("CCL_WORKER_OFFLOAD", "CCL_YIELD")):
        if nranks <= cpus:
            env["CCL_WORKER_OFFLOAD"] = "0"
        else:
            env["CCL_YIELD"] = "sched_yield"
    return env


def run_library(library: str, transport: str, nranks: int, perf_args: List[str],
                programs: Programs, timeout: float,
                extra_env: Optional[Dict[str, str]] = None,
                collective: str = "allreduce", pinning: str = "unpinned",
                cpus: Optional[List[int]] = None) -> RunResult:
    env = dict(os.environ)
    env.update(extra_env or {})
    cpus = cpus or load.allowed_cpus()
    if library == "braid-reg":
        perf_args = perf_args + ["-R", "1"]
    if library in ("braid", "braid-reg"):
        if transport == "tcp":
            env["NCCL_SHM_DISABLE"] = "1"
            # Loopback, like the peers (MPI: btl_tcp_if_include lo, Gloo: 127.0.0.1).
            env.setdefault("NCCL_SOCKET_IFNAME", "lo")
        if transport == "ucx":
            env.update({"BRAID_TRANSPORTS": "net", "NCCL_NET_PLUGIN": programs.ucx_plugin,
                        "NCCL_NET": "UCX", "NCCL_SOCKET_IFNAME": "lo", **UCX_ENV})
        argv = braidrun_argv(programs.braidrun, nranks, pinning, cpus)
        argv += [programs.braid_perf(collective)] + perf_args
        return run_command(argv, env, timeout)
    if library == "oneccl":
        # The variables set here are on the command line (env), so the recorded command is the
        # one to rerun.
        tuned = oneccl_env(env, transport, nranks, len(cpus))
        argv = ["env"] + [f"{k}={v}" for k, v in sorted(tuned.items()) if env.get(k) != v]
        argv += mpirun_argv(programs.mpirun, nranks, pinning, len(cpus))
        # MPI carries oneCCL's key-value-store address and the untimed barriers.
        argv += ["--mca", "btl", "self,vader", programs.oneccl_bench] + oneccl_args(perf_args)
        return run_command(argv, env, timeout)
    if library == "mpi":
        argv = mpirun_argv(programs.mpirun, nranks, pinning, len(cpus))
        if transport == "tcp":
            argv += ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp",
                     "--mca", "btl_tcp_if_include", "lo"]
        if transport == "ucx":
            # Open MPI 4.1 takes pml ucx only over InfiniBand transports and mlx devices unless
            # told otherwise.
            argv += ["--mca", "pml", "ucx", "--mca", "osc", "^ucx", "--mca", "pml_ucx_tls", "any",
                     "--mca", "pml_ucx_devices", "any"]
            argv += [a for k, v in UCX_ENV.items() for a in ("-x", f"{k}={v}")]
        argv += [programs.mpi_perf, "--collective", collective] + perf_args
        return run_command(argv, env, timeout)
    if library == "gloo":
        return run_gloo(nranks, [programs.gloo_allreduce_perf] + perf_args, env, timeout,
                        cpus if pinning == "pinned" else None)
    raise ValueError(f"unknown library {library}")


def run_stream_probe(programs: Programs, timeout: float = 60.0) -> Tuple[Dict, Optional[str]]:
    """{(kernel, threads): best GB/s} from stream_probe, or ({}, why not)."""
    if not os.access(programs.stream_probe, os.X_OK):
        return {}, f"{programs.stream_probe} is not built"
    result = run_command([programs.stream_probe, "-s", "128", "-r", "5"], dict(os.environ),
                         timeout)
    if result.returncode != 0:
        return {}, f"stream_probe failed ({result.returncode}): {result.stderr.strip()[:200]}"
    probe = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and not line.startswith("#"):
            probe[(fields[0], int(fields[1]))] = float(fields[2])
    return probe, None if probe else "stream_probe printed no rows"


def gpu_count() -> int:
    """GPUs visible to NVIDIA's driver here (0 without a driver)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
            return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.TimeoutExpired):
            return 0
    return sum(1 for name in os.listdir("/dev") if name.startswith("nvidia")
               and name[len("nvidia"):].isdigit()) if os.path.isdir("/dev") else 0


def run_nccl_tests(binary: str, ngpus: int, perf_args: List[str], timeout: float) -> RunResult:
    """NVIDIA's nccl-tests all_reduce_perf, one process driving ngpus GPUs (-g)."""
    return run_command([binary, "-g", str(ngpus)] + perf_args, dict(os.environ), timeout)


class CpuMeter:
    """CPU time the whole machine spent busy versus what this process and its children used:
    the difference is what other work on the machine took while the comparison ran."""

    def __init__(self):
        self._start = self._sample()

    @staticmethod
    def _sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        own = os.times()
        return (sum(fields) / ticks, (sum(fields) - idle) / ticks,
                own.user + own.system + own.children_user + own.children_system,
                time.monotonic())

    def others_percent(self) -> Optional[float]:
        """Share of the machine's CPU capacity used by other processes since construction."""
        try:
            end = self._sample()
        except OSError:
            return None
        total = end[0] - self._start[0]
        if total <= 0:
            return None
        others = (end[1] - self._start[1]) - (end[2] - self._start[2])
        return max(0.0, 100.0 * others / total)

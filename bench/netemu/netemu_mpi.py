"""Open MPI beside Braid on netemu's emulated hosts (`netemu.py --peers mpi`): the peers'
MPI_Allreduce benchmark (shared/peers/mpi_allreduce_bench.c, nccl-tests columns) on the same
namespaces, links and placement.

How the ranks get into their hosts. Debian 12's Open MPI 4.1 runs on PMIx 4.2, whose clients
reach their local server (mpirun or orted) over TCP on 127.0.0.1 only: PMIx 4 has no
path-based unix-socket component any more (a unix socket would cross network namespaces, as the
file system is shared; loopback TCP does not, each namespace has its own lo). So `mpirun -np N
ip netns exec NS PROGRAM` fails in MPI_Init ("Unreachable", ext3x_client.c), and every host
gets an orted of its own instead, as on a real cluster:
- mpirun runs in the hub namespace, with an address on the bridge (HUB_ADDR), and reaches the
  hosts by their addresses: `--host 10.214.0.1:R,10.214.0.2:R,...`;
- its rsh launcher's agent (`plm_rsh_agent`, normally ssh) is a script that starts the orted
  with `ip netns exec <host's namespace> unshare --uts`, setting the host's own hostname: with
  one hostname for all, Open MPI takes the hosts for one node and its shared-memory BTL (vader)
  between namespaces crashed in MPI_Allreduce (segfault in mca_btl_vader_poll_handle_frag);
- ranks are the orteds' children, so they talk PMIx over their own namespace's loopback, vader
  between ranks of one host, TCP (btl tcp, `btl_tcp_if_include` the hosts' subnet) between
  hosts, over the shaped links; orted <-> mpirun (OOB) crosses the links too, control only;
- blocks = `--map-by slot` (each host's R slots filled in turn), interleaved = `--map-by node`
  (round robin), both checked against netemu's placement before the first run (check_placement);
  `--bind-to none`, as Braid's ranks are not bound; ranks yield when idle where there are more
  of them than cores, as a single-node mpirun would decide (each orted knows its host only).
netemu counts each host link's bytes per run, so that the traffic is seen on the links.
"""

import os
import shlex
import signal
import stat
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The peers' folder: this checkout's shared/peers, else the machine's.
PEERS_DIRS = (os.path.join(HERE, "..", "..", "shared", "peers"), "/work/shared/peers")
HUB_ADDR = "254"  # the hub's address on the bridge: SUBNET + HUB_ADDR


def find_program(build_dir, explicit=None):
    """The MPI benchmark: explicit, else $MPI_ALLREDUCE_BENCH, else the peers' build
    (build/mpi_allreduce_bench.openmpi of build.sh), else built here with mpicc from the peers'
    source into <build-dir>/netemu/ (again when the source is newer)."""
    explicit = explicit or os.environ.get("MPI_ALLREDUCE_BENCH")
    if explicit:
        return os.path.abspath(explicit)
    for d in PEERS_DIRS:
        built = os.path.join(d, "build", "mpi_allreduce_bench.openmpi")
        if os.access(built, os.X_OK):
            return os.path.normpath(built)
    sources = [os.path.join(d, "mpi_allreduce_bench.c") for d in PEERS_DIRS]
    source = next((s for s in sources if os.path.exists(s)), None)
    if not source:
        raise RuntimeError(f"no MPI benchmark: none of {sources}; give --mpi-program")
    target = os.path.join(os.path.abspath(build_dir), "netemu", "mpi_allreduce_bench")
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # The flags of the peers' build.sh.
        done = subprocess.run(["mpicc", "-O3", "-march=native", "-Wall", source, "-o", target],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"mpicc {source} failed:\n{done.stdout}{done.stderr}")
    return target


def translate_args(rest):
    """all_reduce_perf's arguments (nccl-tests flags) as the MPI benchmark's: sizes, factor,
    warm-up, and -n as exactly that many timed calls (-n N -N N; it would otherwise choose the
    count itself); the out-of-place loop only (-i 0: the table reads out of place). Other flags
    are dropped (-o, -c mean other things there). all_reduce_perf's defaults where not given."""
    names = {"-b": "-b", "--minbytes": "-b", "-e": "-e", "--maxbytes": "-e",
             "-f": "-f", "--stepfactor": "-f", "-n": "-n", "--iters": "-n",
             "-w": "-w", "--warmup_iters": "-w"}
    values = {"-b": "32M", "-e": "32M", "-f": "2", "-n": "20", "-w": "1"}
    i = 0
    while i < len(rest):
        arg, value = rest[i], None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        elif not arg.startswith("--") and len(arg) > 2:
            arg, value = arg[:2], arg[2:]
        if value is None:  # every nccl-tests flag but -h takes a value
            value = rest[i + 1] if i + 1 < len(rest) else ""
            i += 1
        if arg in names:
            values[names[arg]] = value
        i += 1
    return ["-b", values["-b"], "-e", values["-e"], "-f", values["-f"], "-w", values["-w"],
            "-n", values["-n"], "-N", values["-n"], "-i", "0"]


def parse_rows(output):
    """The benchmark's rows: size -> (out-of-place busbw, #wrong, "", time per call in us);
    its columns after #wrong are the in-place ones, iteration counts and median times."""
    rows = {}
    for line in output.splitlines():
        cells = line.split()
        if len(cells) >= 17 and cells[0].isdigit():
            rows[int(cells[0])] = (float(cells[7]), int(cells[8]) if cells[8].isdigit() else -1,
                                   "", float(cells[5]))
    return rows


class OpenMPI:
    """mpirun in the hub namespace, an orted per host namespace (see the module's docstring)."""

    def __init__(self, net, subnet, hosts, per_host, placement, env, pml="ob1"):
        self.net, self.subnet, self.env = net, subnet, dict(env)
        self.n = hosts * per_host
        sh = ("ip", "netns", "exec", net.hub)
        for cmd in (("ip", "addr", "add", f"{subnet}{HUB_ADDR}/24", "dev", "br0"),
                    ("ip", "link", "set", "lo", "up")):
            done = subprocess.run(sh + cmd, capture_output=True, text=True)
            # A second launcher (mpi and mpi-ucx in one run) finds the address there already.
            if done.returncode != 0 and "already assigned" not in done.stderr:
                raise subprocess.CalledProcessError(done.returncode, sh + cmd, done.stdout,
                                                    done.stderr)
        self.dir = tempfile.mkdtemp(prefix="netemu-mpi-")
        self.agent = os.path.join(self.dir, "agent")
        # Called as: AGENT HOST ORTED-COMMAND...; like ssh, a shell parses the command (its
        # arguments carry their own quotes).
        cases = "".join(f"  {subnet}{i + 1}) ns={ns} name=netemu-h{i} ;;\n"
                        for i, ns in enumerate(net.hosts))
        with open(self.agent, "w") as f:
            f.write(f'#!/bin/sh\ncase "$1" in\n{cases}  *) echo "agent: unknown host $1" >&2; '
                    'exit 1 ;;\nesac\nshift\n'
                    'exec ip netns exec "$ns" unshare --uts sh -c "hostname $name && $*"\n')
        os.chmod(self.agent, stat.S_IRWXU)
        net_cidr = f"{subnet}0/24"
        self.mpirun = [
            "ip", "netns", "exec", net.hub, "mpirun", "--allow-run-as-root", "--oversubscribe",
            "-np", str(self.n),
            "--host", ",".join(f"{subnet}{i + 1}:{per_host}" for i in range(hosts)),
            "--map-by", "node" if placement == "interleaved" else "slot", "--bind-to", "none",
            "--mca", "plm", "rsh", "--mca", "plm_rsh_agent", self.agent,
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "oob_tcp_if_include", net_cidr]
        if pml == "ucx":
            # UCX's TCP transport on the hosts' interface (eth0), shared memory within a host;
            # the osc component stays off UCX (MPI one-sided is not used).
            self.env.setdefault("UCX_TLS", "tcp,sm,self")
            self.env.setdefault("UCX_NET_DEVICES", "eth0")
            # Open MPI 4.1 takes pml ucx only over InfiniBand transports and mlx devices unless
            # told otherwise.
            self.mpirun += ["--mca", "pml", "ucx", "--mca", "osc", "^ucx",
                            "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"]
        else:
            self.mpirun += ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp",
                            "--mca", "btl_tcp_if_include", net_cidr]
        # More ranks than cores (4 ranks of 2 emulated hosts on this 2-core VM): each orted sees
        # R ranks for its host's cores and lets them poll without yielding, which made an
        # 8-byte allreduce take 5.6 ms instead of 38 us here (ranks waiting for a core that a
        # polling rank of the other host holds). mpirun alone on one node yields then itself.
        yield_var = "OMPI_MCA_mpi_yield_when_idle"
        if self.n > (os.cpu_count() or 1) and yield_var not in env and yield_var not in os.environ:
            self.mpirun += ["--mca", "mpi_yield_when_idle", "1"]
        for name in self.env:
            self.mpirun += ["-x", name]
        self.expected = [f"netemu-h{r % hosts if placement == 'interleaved' else r // per_host}"
                         for r in range(self.n)]

    def run(self, program, timeout):
        """One mpirun; its output (rank 0's, through mpirun) or an exception."""
        proc = subprocess.Popen(self.mpirun + program, env=dict(os.environ, **self.env),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except BaseException:
            # SIGTERM first: mpirun then stops the orteds and ranks in the namespaces.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
        if proc.returncode != 0:
            raise RuntimeError(f"mpirun exited {proc.returncode}:\n{out[-3000:]}\ncommand: "
                               + shlex.join(self.mpirun + program))
        return out

    def check_placement(self, timeout):
        """Every rank's hostname, which the agent set to its host's: as netemu places ranks?"""
        out = self.run(["sh", "-c", 'echo "netemu-rank $OMPI_COMM_WORLD_RANK $(hostname)"'],
                       timeout)
        seen = {}
        for line in out.splitlines():
            cells = line.split()
            if len(cells) == 3 and cells[0] == "netemu-rank":
                seen[int(cells[1])] = cells[2]
        got = [seen.get(r) for r in range(self.n)]
        if got != self.expected:
            raise RuntimeError(f"Open MPI placed ranks on {got}, netemu's placement is "
                               f"{self.expected}")

    def close(self):
        for path in (self.agent, self.dir):
            try:
                (os.remove if path == self.agent else os.rmdir)(path)
            except OSError:
                pass

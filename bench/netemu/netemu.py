#!/usr/bin/env python3
"""Runs a benchmark over an emulated network: H "hosts" as network namespaces behind one bridge,
each host's link rate-limited with tc's token bucket filter (both directions), R ranks per host
as processes, numbered host by host (blocks) or round robin (interleaved). Every case runs in
the same namespaces, in turn, repeated; the table shows each case's busbw per repeat and their
median. Needs root (ip netns, tc); the namespaces are removed on exit, even on Ctrl-C.

    tools/netemu --hosts 2 --ranks-per-host 2 --rate 2gbit -- -b 16M -e 16M -n 10 -w 3
    tools/netemu --case flat:BRAID_RING_ORDER=rank,NCCL_ALGO=Ring --case host:NCCL_ALGO=Ring ...
    tools/netemu --case auto --peers mpi -- -b 8 -e 16M -f 8 -n 20 -w 5
    tools/netemu --interfaces 2 -- -b 16M -e 16M    # two shaped links per host, both named

Arguments after `--` go to the program (default build/bench/all_reduce_perf, in the
nccl-tests format). `--peers mpi` adds Open MPI as a case of its own ("openmpi"): the peers'
MPI_Allreduce benchmark, launched by mpirun with an orted in every host's namespace, the same
placement, shared memory within a host and TCP over the shaped links between hosts
(netemu_mpi.py), given the same sizes, warm-up and timed calls; Braid then reports its slowest
rank's time (-a 3), as the MPI benchmark does. Each run's bytes sent on every host's link and
TCP retransmissions are counted (JSON: link_tx_bytes, tcp_retrans_segs). The kernel here has
tbf and htb but no netem: delay is not emulated.
"""

import argparse
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import time

import netemu_mpi

SUBNET = "10.214.0."
PORT = 29600


def sh(*argv, check=True):
    """Runs a command; raises with its output when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed ({done.returncode}): "
                           f"{done.stdout}{done.stderr}")
    return done


class Network:
    """The hub namespace (a bridge) and one namespace per host, each with a shaped veth."""

    def __init__(self, hosts, rate, burst, interfaces=1):
        tag = f"braidn-{os.getpid()}"
        self.hub = f"{tag}-hub"
        self.hosts = [f"{tag}-h{i}" for i in range(hosts)]
        # Interface k of every host (eth<k>, 10.214.<k>.<host + 1>) is on bridge br<k>, shaped.
        self.devices = [f"eth{k}" for k in range(interfaces)]
        self.created = []
        try:
            self._build(rate, burst)
        except BaseException:
            self.destroy()
            raise

    def _build(self, rate, burst):
        sh("ip", "netns", "add", self.hub)
        self.created.append(self.hub)
        hub = ("ip", "netns", "exec", self.hub)
        for k in range(len(self.devices)):
            sh(*hub, "ip", "link", "add", f"br{k}", "type", "bridge")
            sh(*hub, "ip", "link", "set", f"br{k}", "up")
        for i, ns in enumerate(self.hosts):
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            inside = ("ip", "netns", "exec", ns)
            for k, dev in enumerate(self.devices):
                port = f"p{i}" + (f"-{k}" if k else "")
                subnet = SUBNET if k == 0 else SUBNET.replace(".0.", f".{k}.")
                sh(*hub, "ip", "link", "add", port, "type", "veth", "peer", "name", dev,
                   "netns", ns)
                sh(*hub, "ip", "link", "set", port, "master", f"br{k}")
                sh(*hub, "ip", "link", "set", port, "up")
                sh(*inside, "ip", "addr", "add", f"{subnet}{i + 1}/24", "dev", dev)
                sh(*inside, "ip", "link", "set", dev, "up")
                if rate:
                    # Out of the host (its eth<k>) and into it (the bridge port towards it).
                    for where, d in ((inside, dev), (hub, port)):
                        sh(*where, "tc", "qdisc", "add", "dev", d, "root", "tbf", "rate", rate,
                           "burst", burst, "latency", "100ms")
            sh(*inside, "ip", "link", "set", "lo", "up")

    def counters(self):
        """Per host, so far: bytes sent on its link, TCP segments retransmitted."""
        out = []
        stats = [f"/sys/class/net/{dev}/statistics/tx_bytes" for dev in self.devices]
        for ns in self.hosts:
            text = sh("ip", "netns", "exec", ns, "cat", *stats, "/proc/net/snmp").stdout.split("\n")
            tcp = [line.split() for line in text if line.startswith("Tcp:")]
            sent = sum(int(text[k]) for k in range(len(self.devices)))  # all the host's links
            out.append((sent, int(tcp[1][tcp[0].index("RetransSegs")])))
        return out

    def destroy(self):
        for ns in reversed(self.created):
            # Processes still inside (a rank or an orted after a failure) would keep it alive.
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ValueError, OSError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
        self.created = []


def remove_stale():
    """Namespaces left by an earlier run that was killed."""
    listed = sh("ip", "netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ")[0]
        m = re.match(r"braidn-(\d+)-", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            sh("ip", "netns", "del", name, check=False)


def host_of(rank, hosts, per_host, placement):
    return rank % hosts if placement == "interleaved" else rank // per_host


def run_case(net, args, env_extra, program):
    """One run of every rank; returns rank 0's output."""
    n = args.hosts * args.ranks_per_host
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("RANK", "LOCAL_", "WORLD_SIZE", "MASTER_", "NCCL_COMM_ID"))}
    base.update({"WORLD_SIZE": str(n), "MASTER_ADDR": f"{SUBNET}1", "MASTER_PORT": str(PORT),
                 "BRAID_COMM_SECRET": secrets.token_hex(16),
                 "NCCL_SOCKET_IFNAME": ",".join(net.devices),
                 "BRAID_TIMEOUT_S": str(args.timeout)})
    base.update(env_extra)
    procs = []
    # Rank 0 hosts the rendezvous (on 10.214.0.1): it must be on host 0, as both placements put it.
    for rank in range(n):
        host = host_of(rank, args.hosts, args.ranks_per_host, args.placement)
        env = dict(base, RANK=str(rank),
                   LOCAL_RANK=str(rank // args.hosts if args.placement == "interleaved"
                                  else rank % args.ranks_per_host),
                   LOCAL_WORLD_SIZE=str(args.ranks_per_host))
        procs.append(subprocess.Popen(["ip", "netns", "exec", net.hosts[host]] + program,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    outputs = []
    deadline = time.time() + args.timeout + 30
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outputs.append((p.returncode, out))
    failed = [(r, rc, out) for r, (rc, out) in enumerate(outputs) if rc != 0]
    if failed:
        r, rc, out = failed[0]
        raise RuntimeError(f"rank {r} exited {rc}:\n{out[-3000:]}")
    return outputs[0][1]


def parse_rows(output):
    """nccl-tests rows: size -> (out-of-place busbw, #wrong, algorithm or "" without -A 1,
    out-of-place time per call in us)."""
    rows = {}
    for line in output.splitlines():
        cells = line.split()
        if len(cells) >= 12 and cells[0].isdigit():
            rows[int(cells[0])] = (float(cells[7]), int(cells[8]) if cells[8].isdigit() else -1,
                                   cells[13] if len(cells) > 13 else "", float(cells[5]))
    return rows


LINK_SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); total, start = 0, None
while True:
    b = c.recv(1 << 20)
    if not b: break
    start = start or time.time(); total += len(b)
print(total / (time.time() - start))
"""
LINK_CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2]))); buf = bytes(1 << 20)
end = time.time() + float(sys.argv[3])
while time.time() < end: c.sendall(buf)
c.close()
"""


def measure_link(net, seconds=3.0):
    """One TCP stream from host 1 to host 0: what the shaped link carries (bytes/s)."""
    server = subprocess.Popen(["ip", "netns", "exec", net.hosts[0], sys.executable, "-c",
                               LINK_SERVER, str(PORT + 1)], stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    sh("ip", "netns", "exec", net.hosts[1], sys.executable, "-c", LINK_CLIENT, f"{SUBNET}1",
       str(PORT + 1), str(seconds))
    out, _ = server.communicate(timeout=30)
    return float(out.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--ranks-per-host", type=int, default=2)
    p.add_argument("--placement", choices=["blocks", "interleaved"], default="blocks")
    p.add_argument("--rate", default="2gbit", help="each host's link, tc syntax ('' for none)")
    p.add_argument("--interfaces", type=int, default=1,
                   help="links per host, each shaped to --rate on a bridge of its own; Braid's "
                        "NCCL_SOCKET_IFNAME names them all")
    p.add_argument("--burst", default="1mb",
                   help="tbf burst (at least rate/HZ: 2 Gbit/s at 250 Hz needs 1 MB)")
    p.add_argument("--case", action="append", default=[],
                   help="NAME[:VAR=VALUE,...]: a configuration to run (default: one, 'braid')")
    p.add_argument("--peers", action="append", default=[],
                   help="mpi[:VAR=VALUE,...]: Open MPI as a case too (netemu_mpi.py; pml ob1, "
                        "btl tcp); mpi-ucx[:...]: Open MPI's UCX pml (UCX_TLS=tcp on the hosts' "
                        "interface); the variables go to mpirun and the ranks (e.g. OMPI_MCA_...)")
    p.add_argument("--mpi-program", help="the MPI benchmark (default: the peers' "
                   "mpi_allreduce_bench, built with mpicc into <build>/netemu if missing)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--program", default=None, help="default: <build>/bench/all_reduce_perf")
    p.add_argument("--build-dir", default="build")
    p.add_argument("--json", help="write every run's figures here")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- then the program's arguments")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("netemu: needs root (ip netns, tc)")
    if args.hosts < 1 or args.ranks_per_host < 1 or args.repeat < 1:
        p.error("--hosts, --ranks-per-host and --repeat must be positive")
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    program = [args.program or os.path.join(os.path.abspath(args.build_dir), "bench",
                                            "all_reduce_perf")] + rest
    def env_of(assignments):
        return dict(a.split("=", 1) for a in assignments.split(",") if a)

    peers = [(spec.partition(":")[0], env_of(spec.partition(":")[2])) for spec in args.peers]
    if (any(name not in ("mpi", "mpi-ucx") for name, _ in peers)
            or len({name for name, _ in peers}) < len(peers)):
        p.error("--peers: 'mpi[:VAR=VALUE,...]' (Open MPI, pml ob1 over btl tcp) and "
                "'mpi-ucx[:...]' (pml ucx, UCX_TLS=tcp) are known, each once")
    mpi_program = None
    if peers and os.path.basename(program[0]) != "all_reduce_perf":
        p.error("--peers: the MPI benchmark is an allreduce; --program must be all_reduce_perf")
    if peers:
        mpi_program = ([netemu_mpi.find_program(args.build_dir, args.mpi_program)]
                       + netemu_mpi.translate_args(rest))
        if not any(a in ("-a", "--average") or a.startswith(("-a", "--average="))
                   for a in rest):
            program += ["-a", "3"]  # the slowest rank's time, as the MPI benchmark reports
    cases = []  # (name, env, kind)
    for spec in args.case or ["braid"]:
        name, _, assignments = spec.partition(":")
        cases.append((name, env_of(assignments), "braid"))
    cases += [("openmpi" if name == "mpi" else "openmpi-ucx", env, name) for name, env in peers]

    remove_stale()
    net = Network(args.hosts, args.rate, args.burst, args.interfaces)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    runs = []
    link = None
    mpis = {}  # peer name -> its OpenMPI launcher
    try:
        for name, env in peers:
            mpis[name] = netemu_mpi.OpenMPI(net, SUBNET, args.hosts, args.ranks_per_host,
                                            args.placement, env, pml="ucx" if name == "mpi-ucx"
                                            else "ob1")
            mpis[name].check_placement(args.timeout)
        if args.hosts > 1:
            link = measure_link(net)
            print(f"# one TCP stream between two hosts: {link / 1e9:.3f} GB/s", flush=True)
        for rep in range(args.repeat):
            for name, env, kind in cases:
                before = net.counters()
                if kind in mpis:
                    output = mpis[kind].run(mpi_program, args.timeout + 30)
                    rows = netemu_mpi.parse_rows(output)
                else:
                    output = run_case(net, args, env, program)
                    rows = parse_rows(output)
                after = net.counters()
                tx = [b[0] - a[0] for a, b in zip(before, after)]
                retrans = [b[1] - a[1] for a, b in zip(before, after)]
                runs.append({"case": name, "env": env, "repeat": rep, "rows": rows,
                             "link_tx_bytes": tx, "tcp_retrans_segs": retrans, "output": output})
                print(f"# {name} repeat {rep + 1}/{args.repeat}: " +
                      ", ".join(f"{s} B {bw:.3f} GB/s {us:.1f} us wrong {w} {algo}"
                                for s, (bw, w, algo, us) in rows.items())
                      + "; sent per host link: " + " ".join(f"{b / 1e6:.1f}" for b in tx)
                      + " MB, TCP retransmits " + " ".join(map(str, retrans)), flush=True)
    finally:
        for mpi in mpis.values():
            mpi.close()
        net.destroy()

    n = args.hosts * args.ranks_per_host
    print(f"\n{args.hosts} hosts x {args.ranks_per_host} ranks ({args.placement}), links "
          f"{args.rate or 'unshaped'}" + (f" (one TCP stream: {link / 1e9:.3f} GB/s)" if link else "")
          + f"; busbw GB/s (out of place), median of {args.repeat}, and the median time per call")
    if peers:
        print("(time per call: the slowest rank's mean over the timed calls, Braid with -a 3)")
    sizes = sorted({s for r in runs for s in r["rows"]})
    print(f"{'case':<16}{'bytes':>12}{'median':>9}{'us':>10}  runs")
    for name, _, _ in cases:
        for size in sizes:
            values = [r["rows"][size][0] for r in runs if r["case"] == name and size in r["rows"]]
            wrong = sum(r["rows"][size][1] for r in runs if r["case"] == name and size in r["rows"])
            algos = sorted({r["rows"][size][2] for r in runs if r["case"] == name
                            and size in r["rows"] and r["rows"][size][2]})
            times = [r["rows"][size][3] for r in runs if r["case"] == name and size in r["rows"]]
            print(f"{name:<16}{size:>12}{statistics.median(values):>9.3f}"
                  f"{statistics.median(times):>10.1f}  "
                  + " ".join(f"{v:.3f}" for v in values) + (f"  #wrong {wrong}" if wrong else "")
                  + (f"  ({','.join(algos)})" if algos else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"hosts": args.hosts, "ranks_per_host": args.ranks_per_host, "ranks": n,
                       "placement": args.placement, "rate": args.rate, "burst": args.burst,
                       "link_bytes_per_s": link, "program": program,
                       "mpi_program": mpi_program,
                       "runs": [{k: v for k, v in r.items() if k != "output"} for r in runs]},
                      f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The alpha-beta model of allreduce across hosts, from measured constants: the time of a flat
ring in rank order with ranks dealt round robin over the hosts (every hop crosses the network),
a ring in host order, NCCL's double binary tree over hosts, and the hierarchical allreduce, for
H hosts of L ranks. Prints a table of predicted times and which schedule wins, and the
prediction for the emulated cases tools/netemu measured.

    python3 bench/netemu/scale_model.py                 # 2-core VM constants, 25 GB/s links
    python3 bench/netemu/scale_model.py --link-gbps 0.239 --net-alpha-us 57 --ranks-per-host 2

Model (per call; S the message, n = H L):
  within a host: alpha_shm per step, bytes over shm_gbps (each rank's share, in parallel);
  across hosts: alpha_net per step, and every host's link carries its ranks' crossing bytes
  over link_gbps each way (the links are the bottleneck, the switch is not);
  rank-ordered ring, interleaved ranks: 2(n-1) steps at alpha_net; each host's link carries
      L 2(n-1)/n S (every rank's hop leaves its host);
  host-ordered ring: 2(n-1) steps, each paced by the slowest hop (alpha_net); each host's link
      carries 2(n-1)/n S;
  double binary tree over hosts (chains within a host): 2 log2(H) + 2(L-1) steps; each tree
      moves half the message up and back down each of its edges, so a host's link carries S/2
      each way per edge it has in the two trees: S at 2 hosts, 1.5 S at 3, 2 S from 4 on (a
      host is inner - a parent and two children - in one tree and a leaf in the other);
  hierarchical: 2(L-1) steps within a host moving 2(L-1)/L S there, then a ring allreduce of
      the message between hosts: 2(H-1) steps, each host's link carrying 2(H-1)/H S.
The reduction's own cost (GB/s of the kernels) is left out: it is the same for every schedule
to first order and small beside the network.
"""

import argparse
import math


def tree_link_edges(h):
    """The most edges of the double binary tree over h hosts at one host, both trees together
    (what Braid's cost model counts from the trees themselves: 2, 3, then 4 from 4 hosts)."""
    return 0 if h < 2 else min(h, 4)


def times_us(h, l, s, a):
    """Predicted microseconds of each schedule for h hosts of l ranks and s bytes."""
    n = h * l
    net_b = 1e-3 / a.link_gbps  # us per byte on a host's link
    shm_b = 1e-3 / a.shm_gbps
    out = {}
    out["rank-ordered ring"] = 2 * (n - 1) * a.net_alpha_us + l * 2 * (n - 1) / n * s * net_b
    out["host-ordered ring"] = 2 * (n - 1) * a.net_alpha_us + 2 * (n - 1) / n * s * net_b
    depth = 2 * math.ceil(math.log2(h)) if h > 1 else 0
    out["tree"] = (depth * a.net_alpha_us + 2 * (l - 1) * a.shm_alpha_us
                   + tree_link_edges(h) / 2 * s * net_b + 2 * (l - 1) / l * s * shm_b)
    out["hierarchical"] = (2 * (l - 1) * a.shm_alpha_us + 2 * (l - 1) / l * s * shm_b
                           + 2 * (h - 1) * a.net_alpha_us + 2 * (h - 1) / h * s * net_b)
    return out


def busbw(n, s, us):
    return 2 * (n - 1) / n * s / (us * 1e3)  # GB/s


def human(s):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= size:
            return f"{s // size} {unit}"
    return f"{s} B"


def against_measured(a):
    """The model's busbw for each measured case (16 MiB, the table's hosts and placement)."""
    import json
    doc = json.load(open(a.measured))
    schedule = {"rank-ring": "rank-ordered ring", "host-ring": "host-ordered ring",
                "tree": "tree", "hierarchical": "hierarchical", "auto": "hierarchical"}
    s = 16 << 20
    print(f"links {a.link_gbps} GB/s; busbw GB/s at 16 MiB, model vs measured median")
    print(f"{'hosts x ranks':>13} {'placement':>12} {'case':>13} {'model':>7} {'measured':>9}")
    for row in doc["tables"][0]["rows"]:
        hosts, ranks = (int(x) for x in row[0].split(" x "))
        name = schedule[row[2]]
        if name == "rank-ordered ring" and row[1] == "blocks":
            name = "host-ordered ring"  # numbered host by host, rank order is host order
        t = times_us(hosts, ranks, s, a)[name]
        print(f"{row[0]:>13} {row[1]:>12} {row[2]:>13} {busbw(hosts * ranks, s, t):>7.3f} "
              f"{row[4]:>9.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--link-gbps", type=float, default=25.0,
                   help="each host's network link, GB/s each way (default: 200 Gbit/s)")
    p.add_argument("--net-alpha-us", type=float, default=57.0,
                   help="one step across hosts (default: Braid's TCP constant, docs/performance.md)")
    p.add_argument("--shm-gbps", type=float, default=10.8, help="within a host (tuner's shm)")
    p.add_argument("--shm-alpha-us", type=float, default=1.6, help="within a host (tuner's shm)")
    p.add_argument("--ranks-per-host", type=int, default=8)
    p.add_argument("--sizes", default="8,65536,1048576,67108864")
    p.add_argument("--measured", help="a tools/netemu results table (docs/results/...json): "
                   "prints the model's busbw for its cases beside the measured medians")
    a = p.parse_args()
    if a.measured:
        return against_measured(a)
    sizes = [int(x) for x in a.sizes.split(",")]
    l = a.ranks_per_host
    print(f"links {a.link_gbps} GB/s, alpha {a.net_alpha_us} us across hosts; shm "
          f"{a.shm_gbps} GB/s, alpha {a.shm_alpha_us} us; {l} ranks per host")
    names = ["rank-ordered ring", "host-ordered ring", "tree", "hierarchical"]
    print(f"{'ranks':>7} {'hosts':>6} {'size':>8} | " + " | ".join(f"{x:>17}" for x in names)
          + " | fastest")
    for n in (16, 64, 256, 1024, 4096, 16384, 65536, 131072):
        h = n // l
        for s in sizes:
            t = times_us(h, l, s, a)
            best = min(t, key=t.get)
            cells = " | ".join(f"{t[x] / 1e3:>14.2f} ms" for x in names)
            print(f"{n:>7} {h:>6} {human(s):>8} | {cells} | {best}")


if __name__ == "__main__":
    main()

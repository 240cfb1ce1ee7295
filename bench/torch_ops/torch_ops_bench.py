"""The PyTorch backend's operations beyond all_reduce, timed over Braid and over gloo in one run:
object collectives (all_gather_object, gather_object, scatter_object_list,
broadcast_object_list), gather, scatter, all_to_all_single and an exchange of isend/recv between rank pairs, at
several sizes. Ranks are processes (multiprocessing spawn); backends alternate round by round so
both see the same machine; the table gives each backend's median time per call (us) over the
rounds and gloo/braid (above 1: Braid is faster).

    /usr/bin/python3 bench/torch_ops/torch_ops_bench.py [--np 2] [--rounds 5] [--iters 20]
(PYTHONPATH must reach the built package: build/python.)
"""

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cases(torch, dist, rank, world):
    """(name, bytes, callable) per operation and size."""
    out = []
    for size in (1024, 1 << 20):
        obj = {"rank": rank, "blob": bytes(size)}
        objs = [dict(obj, rank=r) for r in range(world)]
        out.append(("all_gather_object", size,
                    lambda o=obj: dist.all_gather_object([None] * world, o)))
        out.append(("gather_object", size,
                    lambda o=obj: dist.gather_object(o, [None] * world if rank == 0 else None,
                                                     dst=0)))
        out.append(("scatter_object_list", size,
                    lambda os_=objs: dist.scatter_object_list([None], os_ if rank == 0 else None,
                                                              src=0)))
        out.append(("broadcast_object_list", size,
                    lambda os_=objs: dist.broadcast_object_list(os_[:1], src=0)))
    for n in (256, 256 * 1024, 4 * 1024 * 1024):  # float32: 1 KiB, 1 MiB, 16 MiB
        t = torch.ones(n)
        parts = [torch.ones(n) for _ in range(world)]
        out.append(("gather", 4 * n, lambda t=t, p=parts: dist.gather(
            t, p if rank == 0 else None, dst=0)))
        out.append(("scatter", 4 * n, lambda t=t, p=parts: dist.scatter(
            t, p if rank == 0 else None, src=0)))
        big = torch.ones(n * world)
        got = torch.empty(n * world)
        out.append(("all_to_all_single", 4 * n, lambda b=big, g=got: dist.all_to_all_single(g, b)))
        recv = torch.empty(n)

        def exchange(t=t, recv=recv):
            # Both ranks post their send first: the pattern that needs independent progress.
            peer = rank ^ 1
            if peer < world:
                sent = dist.isend(t, peer)
                dist.recv(recv, peer)
                sent.wait()
        out.append(("isend+recv exchange", 4 * n, exchange))
    return out


def rank_main(rank, world, backend, port, iters, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist

    import braid.torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group(backend, rank=rank, world_size=world)
    results = {}
    for name, size, call in cases(torch, dist, rank, world):
        call()  # warm-up
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        dist.barrier()
        results[f"{name}|{size}"] = (time.perf_counter() - start) / iters * 1e6
    dist.destroy_process_group()
    if rank == 0:
        queue.put(results)


def run(backend, world, iters):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, world, backend, port, iters, queue))
             for r in range(world)]
    for p in procs:
        p.start()
    results = queue.get(timeout=600)
    for p in procs:
        p.join(60)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    runs = {"braid": [], "gloo": []}
    for r in range(args.rounds):
        for backend in (("braid", "gloo") if r % 2 == 0 else ("gloo", "braid")):
            runs[backend].append(run(backend, args.np, args.iters))
    print(f"# {args.np} ranks, {args.rounds} rounds x {args.iters} calls, median us per call")
    print(f"{'operation':<24}{'bytes':>10}{'braid us':>12}{'gloo us':>12}{'gloo/braid':>12}")
    table = []
    for key in runs["braid"][0]:
        name, size = key.split("|")
        b = statistics.median(x[key] for x in runs["braid"])
        g = statistics.median(x[key] for x in runs["gloo"])
        table.append({"operation": name, "bytes": int(size), "braid_us": b, "gloo_us": g})
        print(f"{name:<24}{size:>10}{b:>12.1f}{g:>12.1f}{g / b:>12.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"np": args.np, "rounds": args.rounds, "iters": args.iters,
                       "runs": runs, "table": table}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

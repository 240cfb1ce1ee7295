"""DDP step time over Braid vs over gloo.

Each run spawns N ranks that train an MLP with DistributedDataParallel for --warmup untimed
then --steps timed steps (forward, backward with the gradient all-reduce overlapped, optimizer
step); rank 0 reports the median step. Runs alternate between the backends (braid, gloo, braid,
gloo, ...) --repeat times so that load changes on a shared machine hit both alike; the table
shows the median over runs of each run's median step, and gloo/braid (above 1: Braid faster).

    PYTHONPATH=build/python python3 examples/ddp/bench_ddp.py --nprocs 2,4 --repeat 3

--model large (default): 1024-2048-2048-2048-1024-10, 12.6 M float32 parameters (48 MiB of
gradients per step); --model small: the digits example's MLP (50 K parameters, latency-bound).
--comm-only times dist.all_reduce of the same gradient volume instead of training steps.
"""

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

MODELS = {"large": [1024, 2048, 2048, 2048, 1024, 10], "small": [64, 256, 128, 10]}


def mlp(widths):
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def rank_main(rank, world, args, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ddp_class = DDP
    if args.backend == "braid":
        import braid.torch
        ddp_class = braid.torch.DistributedDataParallel  # buckets in shared memory: ZeroCopy
    torch.set_num_threads(args.threads)
    dist.init_process_group(args.backend, rank=rank, world_size=world)
    torch.manual_seed(0)
    widths = MODELS[args.model]
    model = mlp(widths)
    params = sum(p.numel() for p in model.parameters())
    times = []
    if args.comm_only:
        grads = torch.ones(params)
        for i in range(args.warmup + args.steps):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(grads)
            if i >= args.warmup:
                times.append(time.perf_counter() - start)
    else:
        ddp = ddp_class(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        x = torch.randn(args.batch, widths[0])
        y = torch.randint(0, widths[-1], (args.batch,))
        for i in range(args.warmup + args.steps):
            start = time.perf_counter()
            loss = nn.functional.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i >= args.warmup:
                times.append(time.perf_counter() - start)
    if rank == 0:
        results.put((params, statistics.median(times)))
    dist.destroy_process_group()


def one_run(args, backend, world):
    run_args = argparse.Namespace(**vars(args))
    run_args.backend = backend
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(world, run_args, port, results), nprocs=world)
    return results.get()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nprocs", default="2,4", help="comma-separated rank counts")
    p.add_argument("--repeat", type=int, default=3, help="runs per backend, interleaved")
    p.add_argument("--steps", type=int, default=15, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=32, help="per-rank batch")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--model", default="large", choices=sorted(MODELS))
    p.add_argument("--comm-only", action="store_true")
    args = p.parse_args()
    what = "all_reduce" if args.comm_only else "DDP step"
    print(f"{what}, model {args.model}, median of {args.steps} steps per run, "
          f"{args.repeat} interleaved runs per backend")
    print(f"{'ranks':>5} {'params':>10} {'braid ms':>9} {'gloo ms':>9} {'gloo/braid':>10}  "
          "runs (braid | gloo, ms)")
    for world in [int(n) for n in args.nprocs.split(",")]:
        runs = {"braid": [], "gloo": []}
        for _ in range(args.repeat):
            for backend in ("braid", "gloo"):
                params, median = one_run(args, backend, world)
                runs[backend].append(median * 1e3)
        b, g = statistics.median(runs["braid"]), statistics.median(runs["gloo"])
        detail = " ".join(f"{t:.1f}" for t in runs["braid"]) + " | " + " ".join(
            f"{t:.1f}" for t in runs["gloo"])
        print(f"{world:>5} {params:>10} {b:>9.1f} {g:>9.1f} {g / b:>10.2f}  {detail}", flush=True)


if __name__ == "__main__":
    main()

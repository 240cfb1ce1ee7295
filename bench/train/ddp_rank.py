"""One rank of a DDP training benchmark run (started by bench/train/train_bench.py).

Trains examples/ddp/bench_ddp.py's MLP with DistributedDataParallel twice over, in the same
processes and steps interleaved:
  sync   the step as users run it: forward, backward with the gradient buckets all-reduced
         as they fill (overlapped with the rest of backward), optimizer step;
  no-op  the same step under a DDP comm hook that hands each bucket back unchanged: DDP's
         bucketing and copies, no communication at all.
(step sync - step no-op) is the communication the step did not hide behind backward. Each
--batches value is a shape (a small batch: communication-bound; a large one: compute-bound),
timed in the same processes, steps of every shape and kind taking turns.

Each timed step starts after a barrier (outside the timed region) so that every rank starts it
at once; a step's time is the slowest rank's. Rank 0 prints one line
"train-bench-result: {json}" with every step time.

Backends: braid (import braid.torch), gloo, gloo-view (gloo with DDP's
gradient_as_bucket_view=True, as braid.torch's DDP sets it), and mpi: torch's own MPI backend when this torch has
one, otherwise a gloo group for DDP's set-up with a comm hook that all-reduces each bucket with
Open MPI through mpi4py (launch under mpirun).
"""

import argparse
import gc
import json
import os
import queue
import resource
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "ddp"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from bench_ddp import mlp  # noqa: E402  (the model bench_ddp.py times)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", required=True, choices=["braid", "gloo", "gloo-view", "mpi"])
    p.add_argument("--widths", default="1024,2048,2048,2048,1024,10",
                   help="layer widths of the MLP (default: bench_ddp.py's large model)")
    p.add_argument("--batches", default="2,8", help="per-rank batches, one shape each")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps of each shape and kind")
    p.add_argument("--steps", type=int, default=4, help="timed steps of each shape and kind")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--bucket-mb", type=float, default=25, help="DDP's bucket_cap_mb")
    args = p.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    if args.steps < 1 or args.warmup < 0 or min(args.batches) < 1:
        p.error("--steps and --batches must be positive, --warmup not negative")
    return args


def rank_and_world():
    """torchrun/braidrun's variables, or Open MPI's under mpirun."""
    for rank_var, world_var in (("RANK", "WORLD_SIZE"),
                                ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[world_var])
    sys.exit("ddp_rank.py: no RANK/WORLD_SIZE (braidrun, torchrun) nor OMPI_COMM_WORLD_* (mpirun)")


# DDP's keyword arguments beyond bucket_cap_mb (gloo-view sets gradient_as_bucket_view).
DDP_OPTIONS = {}


def noop_hook(state, bucket):
    """The bucket as it is: the step without communication."""
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


class MpiAllreduceHook:
    """Comm hook: each bucket summed by MPI_Allreduce (in place, on its numpy view), then divided
    by the world size, as DDP's default does. The calls run on a thread of their own so that, as
    with Braid's stream and gloo's worker threads, backward goes on while a bucket is reduced
    (a blocking call inside the hook would stall backward until the bucket is done)."""

    def __init__(self, world):
        from mpi4py import MPI  # initialises MPI; mpi4py asks for MPI_THREAD_MULTIPLE

        self.mpi, self.world = MPI, world
        self.pending = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def __call__(self, state, bucket):
        future = torch.futures.Future()
        self.pending.put((bucket.buffer(), future))
        return future

    def _serve(self):
        while True:
            item = self.pending.get()
            if item is None:
                return
            tensor, future = item
            try:
                self.mpi.COMM_WORLD.Allreduce(self.mpi.IN_PLACE, tensor.numpy(), op=self.mpi.SUM)
                tensor.div_(self.world)
                future.set_result(tensor)
            except Exception as e:  # noqa: BLE001  (DDP re-raises it from backward)
                future.set_exception(e)

    def close(self):
        self.pending.put(None)
        self.thread.join()


def init_group(backend, rank, world):
    """Returns (how the gradients travel, the hook for the sync model or None)."""
    if backend == "braid":
        import braid.torch  # (registers the backend)
        # Its DDP keeps the gradient buckets in registered shared memory (ZeroCopy): what a
        # Braid user runs (docs/pytorch.md, "Shared buckets").
        global DDP
        DDP = braid.torch.DistributedDataParallel
    if backend == "mpi" and dist.is_mpi_available():
        dist.init_process_group("mpi")
        return "torch's MPI backend", None
    if backend == "gloo-view":
        DDP_OPTIONS["gradient_as_bucket_view"] = True
    dist.init_process_group("gloo" if backend in ("mpi", "gloo-view") else backend, rank=rank,
                            world_size=world)
    if backend == "mpi":
        return "Open MPI via mpi4py in a DDP comm hook (set-up over gloo)", MpiAllreduceHook(world)
    if backend == "gloo-view":
        return "torch.distributed backend gloo, DDP gradient_as_bucket_view=True", None
    return f"torch.distributed backend {backend}", None


class Timed:
    """One DDP replica of the model and its step."""

    def __init__(self, model, bucket_mb, hook):
        self.ddp = DDP(model, bucket_cap_mb=bucket_mb, **DDP_OPTIONS)
        self.hook_calls = 0
        if hook is not None:
            def counted(state, bucket):
                self.hook_calls += 1
                return hook(state, bucket)
            self.ddp.register_comm_hook(None, counted)
        self.opt = torch.optim.SGD(self.ddp.parameters(), lr=1e-3)
        self.wall, self.cpu, self.buckets = {}, {}, 0
        self.bounds = {}  # batch -> [start, end, ...] on the host's clock (shared by the ranks)

    def step(self, x, y, timed):
        """One step on batch x (labels y); its times go under len(x)."""
        dist.barrier()
        calls = self.hook_calls
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        start_clock = time.time()
        loss = nn.functional.cross_entropy(self.ddp(x), y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        wall = time.perf_counter() - start
        end_clock = time.time()
        end = resource.getrusage(resource.RUSAGE_SELF)
        self.buckets = self.hook_calls - calls
        if timed:
            self.wall.setdefault(len(x), []).append(wall * 1e3)
            self.bounds.setdefault(len(x), []).extend((start_clock, end_clock))
            # The whole process: the communication threads' CPU counts too.
            self.cpu.setdefault(len(x), []).append(
                (end.ru_utime + end.ru_stime - cpu.ru_utime - cpu.ru_stime) * 1e3)


def gathered(values, world):
    """Every rank's list of values, as a (ranks x values) tensor on every rank."""
    mine = torch.tensor(values, dtype=torch.float64)
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    return torch.stack(everyone)


def replica_drift(model):
    """Largest |difference| between any rank's parameters and rank 0's: 0 when every step's
    gradients were averaged (the all-reduce gives every rank the same bits)."""
    mine = nn.utils.parameters_to_vector(model.parameters()).detach()
    first = mine.clone()
    dist.broadcast(first, 0)
    drift = (mine - first).abs().max().reshape(1)
    dist.all_reduce(drift, op=dist.ReduceOp.MAX)
    return drift.item()


def train(args, rank, world, how, hook):
    """Runs the steps; returns rank 0's result (None elsewhere)."""
    widths = [int(w) for w in args.widths.split(",")]
    torch.manual_seed(0)
    sync = Timed(mlp(widths), args.bucket_mb, hook)
    torch.manual_seed(0)
    noop = Timed(mlp(widths), args.bucket_mb, noop_hook)
    # Each rank its own data, so the replicas stay equal only if the gradients were averaged.
    torch.manual_seed(1 + rank)
    data = [(torch.randn(b, widths[0]), torch.randint(0, widths[-1], (b,))) for b in args.batches]
    for i in range(args.warmup + args.steps):
        for x, y in data:
            # The order alternates so that neither kind always follows the other.
            for replica in ((sync, noop) if i % 2 == 0 else (noop, sync)):
                replica.step(x, y, timed=i >= args.warmup)
    shapes = []
    for b in args.batches:
        # A step lasts until its slowest rank is done; CPU is the mean over the ranks.
        n = len(sync.wall[b])
        wall = gathered(sync.wall[b] + noop.wall[b], world).max(dim=0).values.tolist()
        cpu = gathered(sync.cpu[b] + noop.cpu[b], world).mean(dim=0).tolist()
        # Where the ranks' steps began and ended: how far apart the barrier let them go, and
        # the step as the span from the last rank's start to the last rank's end.
        bounds = gathered(sync.bounds[b] + noop.bounds[b], world)
        starts, ends = bounds[:, 0::2], bounds[:, 1::2]
        spread = ((starts.max(dim=0).values - starts.min(dim=0).values) * 1e3).tolist()
        span = ((ends.max(dim=0).values - starts.max(dim=0).values) * 1e3).tolist()
        shapes.append({"batch": b, "step_ms": wall[:n], "noop_step_ms": wall[n:],
                       "step_median_ms": statistics.median(wall[:n]),
                       "noop_median_ms": statistics.median(wall[n:]),
                       "cpu_ms": statistics.median(cpu[:n]),
                       "noop_cpu_ms": statistics.median(cpu[n:]),
                       "start_spread_ms": spread[:n], "noop_start_spread_ms": spread[n:],
                       "span_ms": span[:n], "noop_span_ms": span[n:]})
    drift = replica_drift(sync.ddp.module)
    # Equal (to rounding) across backends: they all trained the same model on the same data.
    checksum = sum(p.double().sum().item() for p in sync.ddp.parameters())
    if rank != 0:
        return None
    params = sum(p.numel() for p in sync.ddp.parameters())
    return {"backend": args.backend, "transport": how, "ranks": world, "widths": widths,
            "params": params, "gradient_mib": params * 4 / 2**20, "buckets": noop.buckets,
            "torch": torch.__version__, "threads": args.threads,
            "affinity_rank0": sorted(os.sched_getaffinity(0)),
            "replica_max_difference": drift, "parameter_sum": checksum, "shapes": shapes}


def main():
    args = parse_args()
    rank, world = rank_and_world()
    torch.set_num_threads(args.threads)
    how, hook = init_group(args.backend, rank, world)
    result = train(args, rank, world, how, hook)
    if result is not None:
        print("train-bench-result: " + json.dumps(result), flush=True)
    if hasattr(hook, "close"):
        hook.close()
    # The DDP replicas (reference cycles through their hooks) must let go of the process group
    # before it is destroyed: gloo's worker threads ending at interpreter exit abort the process.
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

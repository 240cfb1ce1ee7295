"""Data-parallel training with PyTorch DistributedDataParallel over Braid.

An MLP learns scikit-learn's handwritten digits (1797 8x8 images, shipped with scikit-learn, no
download) with everything the data-parallel recipe uses: a DistributedSampler giving each rank
its share of every epoch, gradient accumulation where only the last micro-batch of a step
all-reduces (DDP's no_sync), and bfloat16 autocast on the CPU. Test accuracy is counted on
every rank's share of the test set and summed with an all_reduce.

One command (the build tree's python folder on PYTHONPATH):
    PYTHONPATH=build/python python3 examples/ddp/train_ddp.py --nprocs 4
starts 4 ranks with torch.multiprocessing.spawn. Under a launcher that sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT (torchrun, braidrun) the script is one rank:
    PYTHONPATH=build/python build/bin/braidrun -n 4 python3 examples/ddp/train_ddp.py
--backend gloo runs the same training over torch's gloo, for comparison.
"""

import argparse
import contextlib
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nprocs", type=int, default=2,
                   help="ranks to spawn when no launcher set RANK/WORLD_SIZE (default 2)")
    p.add_argument("--backend", default="braid", choices=["braid", "gloo"])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch", type=int, default=16, help="micro-batch per rank")
    p.add_argument("--accumulate", type=int, default=2,
                   help="micro-batches per optimizer step (all but the last under no_sync)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--no-autocast", action="store_true", help="train in float32 only")
    return p.parse_args()


def digits():
    """(train, test) TensorDatasets: pixels scaled to [0, 1], a fixed 80/20 split."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    cut = int(0.8 * len(x))
    return (TensorDataset(x[order[:cut]], y[order[:cut]]),
            TensorDataset(x[order[cut:]], y[order[cut:]]))


def mlp():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def autocast(enabled):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


def evaluate(model, test, rank, world, use_autocast):
    """Fraction of the test set classified right: each rank counts every world-th example,
    the counts are summed over the ranks."""
    indices = list(range(rank, len(test), world))
    correct = torch.zeros(2, dtype=torch.int64)
    model.eval()
    with torch.no_grad(), autocast(use_autocast):
        for i in range(0, len(indices), 256):
            x, y = test[indices[i:i + 256]]
            correct[0] += int((model(x).argmax(1) == y).sum())
            correct[1] += len(y)
    model.train()
    dist.all_reduce(correct)
    return correct[0].item() / correct[1].item()


def train(rank, world, args):
    if args.backend == "braid":
        import braid.torch  # noqa: F401  (registers the backend)
    torch.set_num_threads(1)
    dist.init_process_group(args.backend, rank=rank, world_size=world)
    torch.manual_seed(0)
    train_set, test_set = digits()
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=args.batch, sampler=sampler, drop_last=True)
    model = DDP(mlp())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    use_autocast = not args.no_autocast

    dist.barrier()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle every epoch, the same on every rank
        total, batches = 0.0, 0
        for i, (x, y) in enumerate(loader):
            last_micro = (i + 1) % args.accumulate == 0
            # Micro-batches before the last of a step only accumulate gradients locally.
            with (contextlib.nullcontext() if last_micro else model.no_sync()):
                with autocast(use_autocast):
                    logits = model(x)
                loss = nn.functional.cross_entropy(logits.float(), y) / args.accumulate
                loss.backward()
            if last_micro:
                opt.step()
                opt.zero_grad(set_to_none=True)
            total += loss.item() * args.accumulate
            batches += 1
        if rank == 0 and (epoch % 10 == 9 or epoch == args.epochs - 1):
            print(f"epoch {epoch + 1:3d}  loss {total / max(batches, 1):.4f}", flush=True)
    elapsed = time.perf_counter() - start
    accuracy = evaluate(model.module, test_set, rank, world, use_autocast)
    if rank == 0:
        print(f"backend {args.backend}, {world} ranks, {args.epochs} epochs: "
              f"test accuracy {accuracy:.4f}, training {elapsed:.2f} s", flush=True)
    dist.destroy_process_group()


def spawned(rank, world, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    train(rank, world, args)


def main():
    args = parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    with socket.socket() as s:  # a free port for torch's store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(spawned, args=(args.nprocs, args, port), nprocs=args.nprocs)


if __name__ == "__main__":
    main()

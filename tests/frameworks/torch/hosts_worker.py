"""A rank of a two-host DDP job started by torchrun (test_hosts.py): trains a small model for
--steps steps on data that depends on the global rank, over --backend (braid or gloo), and rank 0
saves the final parameters to --out."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--backend", required=True)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--out", required=True)
args = parser.parse_args()
if args.backend == "braid":
    import braid.torch  # noqa: F401  (torch 2.5+ registers it at import torch when installed)

dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1000 + rank)
for step in range(args.steps):
    x = torch.randn(32, 16, generator=data)
    y = torch.randn(32, 4, generator=data)
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
if rank == 0:
    torch.save([p.detach().clone() for p in model.parameters()], args.out)
dist.destroy_process_group()
print(f"rank {rank} of {world} on {os.uname().nodename} done", flush=True)

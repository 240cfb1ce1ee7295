"""A rank started by torchrun (python3 -m torch.distributed.run): reads RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT from the environment (init_method env://), checks an all_reduce and
one DDP step over Braid, prints "rank R ok"."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import braid.torch  # noqa: F401

dist.init_process_group("braid")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
t = torch.arange(10, dtype=torch.float64) * (rank + 1)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(10, dtype=torch.float64) * (world * (world + 1) / 2)), t
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
model(torch.full((3, 4), float(rank))).sum().backward()
# The gradient of sum(W x + b) over W is the column sums of x, averaged over the ranks.
mean_x = 3 * sum(range(world)) / world
assert torch.allclose(model.module.weight.grad, torch.full((2, 4), mean_x)), model.module.weight.grad
dist.destroy_process_group()
print(f"rank {rank} ok", flush=True)

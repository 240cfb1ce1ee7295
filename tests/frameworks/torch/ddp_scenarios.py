"""DDP training runs used by test_ddp.py: the same model, seed and data trained once over a
Braid process group and once over a gloo group, in the same processes."""

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
BATCH = 8


class Net(nn.Module):
    """Linear layers around a BatchNorm (its running statistics are buffers DDP broadcasts).
    `branch` is used only on even steps: with find_unused_parameters=True DDP must notice."""

    def __init__(self, with_branch):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.bn = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 48)
        self.out = nn.Linear(48, 5)
        self.branch = nn.Linear(48, 5) if with_branch else None

    def forward(self, x, use_branch=False):
        h = torch.relu(self.fc2(torch.relu(self.bn(self.fc1(x)))))
        y = self.out(h)
        if use_branch:
            y = y + self.branch(h)
        return y


def batch(rank, step, micro):
    g = torch.Generator().manual_seed(100003 * rank + 101 * step + micro)
    return torch.randn(BATCH, 20, generator=g), torch.randint(0, 5, (BATCH,), generator=g)


def train(group, rank, scenario):
    """Returns the model's final parameters and buffers after STEPS steps of `scenario`."""
    torch.manual_seed(1234)
    with_branch = scenario == "find_unused"
    model = Net(with_branch)
    # A small bucket cap: several buckets per step, all-reduced while backward still runs.
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.01,
              find_unused_parameters=with_branch)
    if scenario == "fp16_hook":
        ddp.register_comm_hook(group, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    micro_steps = 3 if scenario == "no_sync" else 1
    for step in range(STEPS):
        for micro in range(micro_steps):
            last = micro == micro_steps - 1
            ctx = contextlib.nullcontext() if last else ddp.no_sync()
            with ctx:
                x, y = batch(rank, step, micro)
                use_branch = with_branch and step % 2 == 0
                loss = nn.functional.cross_entropy(ddp(x, use_branch), y) / micro_steps
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    state = {"param " + k: v for k, v in model.named_parameters()}
    state.update({"buffer " + k: v for k, v in model.named_buffers()})
    return {k: v.detach().clone() for k, v in state.items()}


def max_difference(a, b):
    worst = 0.0
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        worst = max(worst, (a[k].double() - b[k].double()).abs().max().item())
    return worst


def assert_same_on_every_rank(state, gloo, world):
    """The DDP invariant: every rank holds the same parameters after each step. (Buffers are
    rank 0's at the start of each forward, then each rank's own batch statistics update them.)"""
    flat = torch.cat([v.double().reshape(-1) for k, v in state.items() if k.startswith("param")])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat, group=gloo)
    for r, other in enumerate(gathered):
        assert torch.equal(other, flat), f"rank {r}'s model differs from this rank's"

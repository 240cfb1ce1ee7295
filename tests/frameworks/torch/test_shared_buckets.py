"""braid.torch.DistributedDataParallel: DDP's gradient buckets in shared memory, all-reduced by
Braid's ZeroCopy algorithm (docs/pytorch.md, "Shared buckets").

Two ranks train a model of 2-4 MiB weights for 3 steps. Each step's gradients must equal, element
by element, the float64 reference: the average of both ranks' gradients, computed on every rank
from the same seeds and data. Braid's log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=COLL) tells which
algorithm ran each all-reduce: with shared buckets every bucket's (1 MiB or more) is ZeroCopy and
none falls back for want of registration. With BRAID_TORCH_SHARED_BUCKETS=0 the same run must
show the opposite (plain buckets fall back to the ring), so the log check is shown to tell the
two apart.
"""

import os
import re

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402

STEPS = 3
BATCH = 8
MIB = 1 << 20
# "AllReduce: opCount 7 sendbuff 0x.. recvbuff 0x.. count 524288 datatype 7 op 4 ... algorithm
# ZeroCopy" (op: the ncclRedOp_t the caller passed; 4 is ncclAvg)
CALL = re.compile(r"AllReduce: opCount (\d+) sendbuff \S+ recvbuff \S+ count (\d+) datatype \d+ "
                  r"op (\d+) .*algorithm (\S+)")
NCCL_AVG = 4
# "AllReduce #7: buffers not registered on every rank, Ring runs it"
FALLBACK = re.compile(r"AllReduce #(\d+): buffers not registered on every rank, (\S+) runs it")


def _model():
    import torch.nn as nn

    # Weights of 2, 4 and 2 MiB (float32): DDP puts them in buckets of 1 MiB or more.
    return nn.Sequential(nn.Linear(512, 1024), nn.Tanh(), nn.Linear(1024, 1024), nn.Tanh(),
                         nn.Linear(1024, 512))


def _batch(rank, step):
    g = torch.Generator().manual_seed(7919 * rank + 31 * step + 5)
    return torch.randn(BATCH, 512, generator=g), torch.randn(BATCH, 512, generator=g)


def _reference_grads(module, world, step):
    """The mean over ranks of each rank's gradient, in float64, from the current parameters."""
    import copy

    ref = copy.deepcopy(module).double()
    total = [torch.zeros_like(p) for p in ref.parameters()]
    for r in range(world):
        x, y = _batch(r, step)
        loss = torch.nn.functional.mse_loss(ref(x.double()), y.double())
        for t, g in zip(total, torch.autograd.grad(loss, list(ref.parameters()))):
            t += g
    return [t / world for t in total]


def _check_grads(ddp, world, step):
    reference = _reference_grads(ddp.module, world, step)
    for i, (p, ref) in enumerate(zip(ddp.module.parameters(), reference)):
        got = p.grad.double()
        # float32 against float64: a few ulps of float32 at the tensor's scale; a gradient that
        # missed a rank's term is off by about half the tensor's scale.
        bound = 1e-4 * ref.abs() + 1e-5 * ref.abs().max()
        bad = ((got - ref).abs() > bound).nonzero()
        assert bad.numel() == 0, (
            f"step {step}: parameter {i} {tuple(p.shape)}: {bad.shape[0]} elements differ from "
            f"the float64 reference, first at {bad[0].tolist()}: {got[tuple(bad[0])].item()} vs "
            f"{ref[tuple(bad[0])].item()}")


def _check_views(ddp):
    """Each gradient is a view of a bucket: it lies inside shared memory exactly when the
    buckets do, and DDP was built with gradient_as_bucket_view."""
    assert ddp.gradient_as_bucket_view
    for i, p in enumerate(ddp.module.parameters()):
        assert p.grad._base is not None, f"parameter {i}: its gradient is not a view of a bucket"


def _train(rank, world, log_dir, shared):
    log = os.path.join(log_dir, f"rank{rank}.log")
    os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="COLL", NCCL_DEBUG_FILE=log)
    import gc

    import torch.distributed as dist

    import braid.torch

    dist.init_process_group("braid", rank=rank, world_size=world)
    torch.manual_seed(1234)
    ddp = braid.torch.DistributedDataParallel(_model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        opt.zero_grad()
        x, y = _batch(rank, step)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        _check_grads(ddp, world, step)
        _check_views(ddp)
        opt.step()

    # all_reduce_coalesced registers each tensor's allocation as all_reduce does.
    with braid.torch.shared_memory():
        coalesced = [torch.full((MIB // 4,), float(rank + 1)), torch.full((MIB // 2,), 2.0 * rank)]
    assert [braid.torch.is_shared(t) for t in coalesced] == [shared, shared]
    dist.all_reduce_coalesced(coalesced)
    assert torch.equal(coalesced[0], torch.full((MIB // 4,), 3.0))
    assert torch.equal(coalesced[1], torch.full((MIB // 2,), 2.0))

    stats = braid.torch.shared_allocator_stats()
    if shared:
        assert stats["installed"], stats
        assert stats["depth"] == 0, f"a shared_memory() scope was left open: {stats}"
        assert stats["registrations"] >= 2, f"the buckets were not registered: {stats}"
    else:
        assert stats["registrations"] == 0, stats

    # DDP's reducer holds the buckets and the group: dropping it frees both. The coalesced
    # tensors outlive the group, whose destruction must drop their registrations.
    pg = ddp.process_group
    dist.destroy_process_group()
    del ddp, opt, pg
    gc.collect()
    stats = braid.torch.shared_allocator_stats()
    assert stats["registrations"] == 0, f"registrations outlived the process group: {stats}"
    assert stats["allocations"] == (2 if shared else 0), stats
    del coalesced
    stats = braid.torch.shared_allocator_stats()
    assert stats["allocations"] == 0, f"shared allocations outlived their tensors: {stats}"

    # Each call's line names the algorithm chosen; ZeroCopy adds a line when it finds a buffer
    # unregistered and hands the call to another algorithm.
    calls, ops = [], []
    with open(log) as f:
        for line in f:
            m = CALL.search(line)
            if m and int(m.group(2)) * 4 >= MIB:
                calls.append([int(m.group(1)), m.group(4)])
                ops.append(int(m.group(3)))
            m = FALLBACK.search(line)
            if m and calls and calls[-1][0] == int(m.group(1)):
                calls[-1][1] += " -> " + m.group(2)
    ran = [algorithm for _, algorithm in calls]
    # The DDP buckets' all-reduces average inside Braid (the hook braid.torch's DDP installs);
    # the two coalesced tensors' are sums.
    assert ops[-2:] == [0, 0] and ops[:-2] == [NCCL_AVG] * (len(ops) - 2), (
        f"ops of the all-reduces: {ops} ({log})")
    # Step 1 all-reduces DDP's first buckets (torch 1.13: one, the whole model), the later steps
    # those DDP rebuilt in gradient order in step 2's forward (two or more: its first bucket is
    # capped at 1 MiB): both kinds must have run.
    assert len(calls) >= 1 + 2 * (STEPS - 1) + 2, f"{len(calls)} bucket all-reduces in {log}: {calls}"
    if shared:
        assert ran == ["ZeroCopy"] * len(ran), f"the all-reduces ran {ran} ({log})"
    else:
        assert all(a.startswith("ZeroCopy -> ") for a in ran), (
            f"plain buckets should fall back from ZeroCopy: {ran} ({log})")


def test_shared_buckets_run_zero_copy(tmp_path):
    run_ranks(_train, 2, str(tmp_path), True, timeout=150)


def test_plain_buckets_fall_back(tmp_path):
    """BRAID_TORCH_SHARED_BUCKETS=0: the same gradients, and the log check above would fail."""
    run_ranks(_train, 2, str(tmp_path), False, timeout=150,
              env={"BRAID_TORCH_SHARED_BUCKETS": "0"})

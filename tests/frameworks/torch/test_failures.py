"""Failures surface in Python as exceptions carrying Braid's message, never as hangs: a peer
killed during a collective and under DDP's backward, a peer that stops calling (torch's timeout
becomes Braid's deadline; a call's own options.timeout bounds that call), and bad arguments (refused on the caller's thread, the group stays
usable)."""

import os
import re

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402


def _die():
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def _killed_peer(rank, world):
    import time

    import torch.distributed as dist

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world)
    t = torch.ones(1 << 18)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full_like(t, world))
    if rank == world - 1:
        _die()
    start = time.monotonic()
    with pytest.raises(RuntimeError) as failure:
        dist.all_reduce(t)
    elapsed = time.monotonic() - start
    text = str(failure.value)
    print(f"rank {rank}: error after {elapsed:.2f} s: {text}", flush=True)
    assert "braid allreduce failed" in text, text
    assert "ncclRemoteError" in text or "remote process" in text, text
    assert elapsed < 30, f"the error took {elapsed:.1f} s"
    # The communicator stays failed: the next call fails at once with Braid's text too.
    with pytest.raises(RuntimeError, match="braid broadcast failed"):
        dist.broadcast(t, src=0)
    dist.destroy_process_group()  # aborts: must not wait for the dead rank


def test_killed_peer_during_allreduce():
    run_ranks(_killed_peer, 3, killed={2}, timeout=60)


def _killed_peer_ddp(rank, world):
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)))
    x = torch.randn(16, 64)
    model(x).sum().backward()
    if rank == 1:
        _die()
    with pytest.raises(RuntimeError) as failure:
        model(x).sum().backward()
    text = str(failure.value)
    print(f"rank {rank}: DDP backward raised: {text}", flush=True)
    # DDP's next collective may be a broadcast (its buffers and parameters) or the gradient
    # all-reduce: whichever it is, it fails with Braid's text naming the dead peer.
    assert "braid allreduce failed" in text or "braid broadcast failed" in text, text
    assert "rank 1" in text, text


def test_killed_peer_under_ddp():
    run_ranks(_killed_peer_ddp, 2, killed={1}, timeout=60)


def _expect_timeout(call, low, high):
    """Runs `call`, which must fail once a deadline of about `low` s passes (before `high`),
    with words torch's own timeout tests look for (distributed_test.py's _test_barrier_timeout
    matches " (Timed out|closed|timeout) ") and the silent rank named. Returns the text."""
    import time

    start = time.monotonic()
    with pytest.raises(RuntimeError) as failure:
        call()
    elapsed = time.monotonic() - start
    text = str(failure.value)
    print(f"rank 0: error after {elapsed:.2f} s: {text}", flush=True)
    assert low < elapsed < high, elapsed
    assert re.search(" (Timed out|closed|timeout) ", text), text
    assert "waiting for rank 1" in text, text
    return text


def _silent_peer(rank, world):
    import datetime
    import os
    import time

    import torch.distributed as dist

    import braid.torch  # noqa: F401

    os.environ.pop("BRAID_TIMEOUT_S", None)  # it would win over torch's timeout
    dist.init_process_group("braid", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=3))
    pg = dist.distributed_c10d._get_default_group()
    assert braid.torch.backend(pg).comm_timeout_seconds() == 3.0
    if rank == 1:
        time.sleep(5)  # alive, never calls: only the deadline can end rank 0's wait
        return
    text = _expect_timeout(lambda: dist.all_reduce(torch.ones(10)), 2.5, 8)
    assert re.search("braid allreduce failed.*timed out", text), text
    assert "waiting for rank 1, which is alive but has not answered" in text, text
    assert "remote process exited" not in text, text


def _silent_peer_barrier(rank, world):
    import datetime
    import time

    import torch.distributed as dist

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world)
    group = dist.new_group(timeout=datetime.timedelta(seconds=1))
    if rank == 0:  # as torch's test_barrier_timeout_full_group: only rank 0 enters the barrier
        _expect_timeout(lambda: dist.barrier(group), 0.9, 5)
    else:
        time.sleep(3)


@pytest.mark.skipif("BRAID_TIMEOUT_S" in os.environ, reason="BRAID_TIMEOUT_S would win over torch's timeout")
def test_barrier_with_a_timeout():
    run_ranks(_silent_peer_barrier, 2, timeout=60)


def test_silent_peer_meets_torch_timeout():
    run_ranks(_silent_peer, 2, timeout=60)


def _per_call_timeout(rank, world):
    import datetime
    import time

    import torch.distributed as dist

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    pg = dist.distributed_c10d._get_default_group()
    opts = dist.AllreduceOptions()
    opts.timeout = datetime.timedelta(seconds=5)
    t = torch.ones(10)
    pg.allreduce([t], opts).wait()  # a call that meets its own timeout leaves the group's
    assert torch.equal(t, torch.full((10,), 2.0)), t
    assert braid.torch.backend(pg).comm_timeout_seconds() == 60.0
    if rank == 0:
        opts.timeout = datetime.timedelta(seconds=1)  # this call's own, not the group's 60 s
        text = _expect_timeout(lambda: pg.allreduce([torch.ones(10)], opts).wait(), 0.9, 5)
        assert "Timed out" in text, text
    else:
        time.sleep(3)


@pytest.mark.skipif("BRAID_TIMEOUT_S" in os.environ, reason="BRAID_TIMEOUT_S would win over torch's timeout")
def test_per_call_timeout():
    run_ranks(_per_call_timeout, 2, timeout=60)

"""Sends and receives that never deadlock, whatever order they are posted in and at any size.

isend/irecv in every posting order, batch_isend_irecv, several messages in flight per peer, and
tags matched by tag, from 0 elements to 64 MiB, at 2 and 3 ranks: ranks as processes
(torch.distributed's functions, over Braid and, as the reference behaviour, over gloo) and ranks
as threads of one process (process-group objects over one HashStore).
"""

import datetime
import threading

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402


class DistOps:
    """torch.distributed's own point-to-point functions on the default group."""

    def __init__(self):
        import torch.distributed as dist

        self.dist = dist

    def isend(self, t, peer, tag):
        return self.dist.isend(t, peer, tag=tag)

    def irecv(self, t, peer, tag):
        return self.dist.irecv(t, peer, tag=tag)

    def batch(self, posted):
        d = self.dist
        return d.batch_isend_irecv(
            [d.P2POp(d.isend if s else d.irecv, t, p, tag=tag) for s, t, p, tag in posted])


class GroupOps:
    """A process-group object's send and recv (ranks as threads: no default group per rank)."""

    def __init__(self, pg):
        self.pg = pg

    def isend(self, t, peer, tag):
        return self.pg.send([t], peer, tag)

    def irecv(self, t, peer, tag):
        return self.pg.recv([t], peer, tag)

    def batch(self, posted):
        return [(self.isend if s else self.irecv)(t, p, tag) for s, t, p, tag in posted]


def _processes(rank, world, backend):
    import torch.distributed as dist

    import braid.torch  # noqa: F401
    import p2p_checks

    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    p2p_checks.run_all(DistOps(), rank, world)
    dist.barrier()
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("backend", ["braid", "gloo"])
def test_processes(backend, world):
    run_ranks(_processes, world, backend, timeout=240)


@pytest.mark.parametrize("world", [2, 3])
def test_threads(world):
    import torch.distributed as dist

    import braid.torch
    import p2p_checks

    torch.set_num_threads(1)
    store = dist.HashStore()
    errors = {}

    def rank_main(rank):
        try:
            pg = braid.torch.create_process_group(store, rank, world,
                                                  datetime.timedelta(seconds=60))
            p2p_checks.run_all(GroupOps(pg), rank, world)
            del pg
        except BaseException as e:  # reported with the rank below
            errors[rank] = repr(e)

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a rank thread is still running after 240 s"
    assert not errors, f"ranks failed: {errors}"

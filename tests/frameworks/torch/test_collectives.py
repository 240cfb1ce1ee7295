"""Every collective of the Braid process group at 1, 2 and 3 ranks, element by element."""

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402


def _collectives(rank, world):
    import torch.distributed as dist

    import braid.torch  # noqa: F401
    import collective_checks as cc

    dist.init_process_group("braid", rank=rank, world_size=world)
    assert dist.get_backend() == "braid"
    for check in (cc.check_barrier, cc.check_allreduce, cc.check_allreduce_coalesced,
                  cc.check_broadcast, cc.check_reduce, cc.check_all_gather,
                  cc.check_reduce_scatter, cc.check_send_recv, cc.check_future_chain,
                  cc.check_premul_sum, cc.check_subgroup):
        check(rank, world)
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2, 3])
def test_collectives(world):
    run_ranks(_collectives, world, timeout=120)

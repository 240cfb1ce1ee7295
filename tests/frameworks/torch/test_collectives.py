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
                  cc.check_premul_sum, cc.check_gloo_parity, cc.check_gloo_parity_gathers,
                  cc.check_subgroup):
        check(rank, world)
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2, 3])
def test_collectives(world):
    run_ranks(_collectives, world, timeout=120)


def _sequence_numbers(rank, world):
    import torch.distributed as dist

    import braid.torch

    dist.init_process_group("braid", rank=rank, world_size=world)
    group = braid.torch.backend()
    assert group._get_sequence_number_for_group() == 0  # not set yet, as gloo's
    group._set_sequence_number_for_group()
    start = group._get_sequence_number_for_group()
    assert start > 0
    starts = [None] * world
    dist.all_gather_object(starts, start)  # itself two collectives
    assert starts == [start] * world, starts  # rank 0's, read by all
    now = group._get_sequence_number_for_group()
    for i in range(3):
        dist.all_reduce(torch.ones(3))
        assert group._get_sequence_number_for_group() == now + i + 1
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 3])
def test_sequence_numbers(world):
    """The group's sequence number, which torch's ProcessGroupWrapper compares across ranks
    (TORCH_DISTRIBUTED_DEBUG=DETAIL): rank 0's start on every rank, +1 per collective."""
    run_ranks(_sequence_numbers, world, timeout=60)

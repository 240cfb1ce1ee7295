"""gather, scatter, all_to_all, all_gather_coalesced and the object collectives at 2 and 3
ranks, element by element, over Braid and over gloo (the reference behaviour) in one run.
gloo in torch 1.13 has no list-form all_to_all and scatters strided inputs wrongly, so its run
leaves those two checks out."""

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402


def _exchange(rank, world, backend):
    import torch.distributed as dist

    import braid.torch  # noqa: F401
    import exchange_checks as ec

    dist.init_process_group(backend, rank=rank, world_size=world)
    for check in ec.ALL:
        if backend == "gloo" and check in ec.GLOO_LACKS:
            continue
        check(rank, world)
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("backend", ["braid", "gloo"])
def test_exchange(backend, world):
    run_ranks(_exchange, world, backend, timeout=180)

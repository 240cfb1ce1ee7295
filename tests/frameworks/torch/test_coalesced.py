"""PyTorch 2.x's tensor-coalesced collectives over Braid (torch.distributed._coalescing_manager,
as FSDP uses it): several all_gather_into_tensor, reduce_scatter_tensor or all_reduce calls that
torch hands to the backend as one allgather_into_tensor_coalesced, reduce_scatter_tensor_coalesced
or allreduce_coalesced. Every element is checked against an exact reference made from the
inputs (integers, and floats that sum exactly), outputs poisoned first; sizes 0, 1, 7 and 1031
elements per rank, mixed dtypes in one group, 1, 2 and 3 ranks. PyTorch 1.13 has no such calls."""

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip(f"BRAID-TORCH-SKIP: this torch ({torch.__version__}) has no tensor-coalesced "
                "collectives", allow_module_level=True)

from torch_ranks import run_ranks  # noqa: E402

SIZES = [0, 1, 7, 1031]
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16]
POISON = -777


def _input(rank, size, dtype, salt):
    # Small integers: sums and products of a few of them are exact in every dtype above.
    return ((torch.arange(size, dtype=torch.int64) * 7 + rank * 3 + salt) % 11).to(dtype)


def _coalesced(rank, world):
    import torch.distributed as dist

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world)
    cases = [(n, d, i) for i, (n, d) in enumerate((n, d) for n in SIZES for d in DTYPES)]

    # all_gather_into_tensor, coalesced.
    outs = [torch.full((world * n,), POISON, dtype=d) for n, d, _ in cases]
    with dist._coalescing_manager():
        for (n, d, salt), out in zip(cases, outs):
            dist.all_gather_into_tensor(out, _input(rank, n, d, salt))
    for (n, d, salt), out in zip(cases, outs):
        expected = torch.cat([_input(r, n, d, salt) for r in range(world)])
        assert torch.equal(out, expected), (n, d, out, expected)

    # reduce_scatter_tensor, coalesced, SUM then MAX.
    for op, fold in ((dist.ReduceOp.SUM, lambda a, b: a + b), (dist.ReduceOp.MAX, torch.maximum)):
        outs = [torch.full((n,), POISON, dtype=d) for n, d, _ in cases]
        with dist._coalescing_manager():
            for (n, d, salt), out in zip(cases, outs):
                dist.reduce_scatter_tensor(out, _input(rank, world * n, d, salt), op=op)
        for (n, d, salt), out in zip(cases, outs):
            full = _input(0, world * n, d, salt)
            for r in range(1, world):
                full = fold(full, _input(r, world * n, d, salt))
            expected = full[rank * n:(rank + 1) * n]
            assert torch.equal(out, expected), (op, n, d, out, expected)

    # all_reduce, coalesced (allreduce_coalesced).
    tensors = [_input(rank, n, d, salt) for n, d, salt in cases]
    with dist._coalescing_manager():
        for t in tensors:
            dist.all_reduce(t)
    for (n, d, salt), t in zip(cases, tensors):
        expected = sum(_input(r, n, d, salt).to(torch.float64) for r in range(world)).to(d)
        assert torch.equal(t, expected), (n, d, t, expected)

    # async_ops: the manager's works complete with the same results.
    outs = [torch.full((world * n,), POISON, dtype=d) for n, d, _ in cases[:5]]
    with dist._coalescing_manager(async_ops=True) as cm:
        for (n, d, salt), out in zip(cases[:5], outs):
            dist.all_gather_into_tensor(out, _input(rank, n, d, salt))
    cm.wait()
    for (n, d, salt), out in zip(cases[:5], outs):
        assert torch.equal(out, torch.cat([_input(r, n, d, salt) for r in range(world)]))

    # Mismatched pairs are refused on the caller's thread, naming the argument.
    try:
        with dist._coalescing_manager():
            dist.all_gather_into_tensor(torch.empty(world * 3), torch.empty(3))
            dist.all_gather_into_tensor(torch.empty(world * 3 + 1), torch.empty(3))
    except ValueError as e:
        assert "outputs[1] has" in str(e) and f"expected world size {world}" in str(e), str(e)
    else:
        raise AssertionError("a wrongly sized output was accepted")
    dist.barrier()
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2, 3])
def test_coalesced_collectives(world):
    run_ranks(_coalesced, world, timeout=120)

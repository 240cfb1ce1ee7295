"""Bad arguments are refused on the caller's thread with an error naming the argument and its
value; nothing is sent, and the group stays usable (checked by an all_reduce afterwards)."""

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402


TORCH_MAJOR = int(torch.__version__.split(".")[0])


def _bad_input(rank, world):
    import torch.distributed as dist

    import braid.torch  # noqa: F401

    dist.init_process_group("braid", rank=rank, world_size=world)
    RO = dist.ReduceOp
    pg = dist.distributed_c10d._get_default_group()
    x = torch.ones(8)
    cases = [
        (lambda: dist.gather(torch.ones(4, 4).t(), [torch.empty(4, 4) for _ in range(world)]
                             if rank == 0 else None, dst=0), ValueError, "is not contiguous"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), TypeError,
         "dtype Short is not supported"),
        # (The group itself: torch 2.x's dist.broadcast moves complex tensors as real views.)
        (lambda: pg.broadcast(torch.ones(4, dtype=torch.complex64), 0), TypeError,
         "dtype ComplexFloat is not supported"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool), op=RO.AVG), TypeError,
         "torch.bool tensors cannot be averaged or scaled"),
        (lambda: dist.all_reduce_coalesced([torch.ones(4, dtype=torch.bool)]), TypeError,
         "torch.bool cannot be reduced"),
        # (Non-CPU tensors are refused the same way; torch 1.13's dispatcher routes only CPU and
        # CUDA tensors to a process group, and this CI has no CUDA.)
        # (torch 2.x's dispatcher refuses a sparse broadcast itself, for every backend.)
        (lambda: dist.broadcast(torch.ones(4).to_sparse(), src=0), ValueError,
         "has layout Sparse; only dense \\(strided\\) tensors are supported")
        if TORCH_MAJOR < 2 else
        (lambda: dist.broadcast(torch.ones(4).to_sparse(), src=0), NotImplementedError,
         "Could not run 'c10d::broadcast_' with arguments from the 'SparseCPU' backend"),
        (lambda: dist.all_reduce(torch.ones(4).to_sparse(), op=RO.MAX), ValueError,
         "sparse tensors take SUM only"),
        (lambda: dist.all_reduce(x, op=RO.BAND), TypeError,
         "BAND needs an integer or bool tensor, not Float"),
        # (Where the bitwise ops are not planned they are refused, never summed.)
        (lambda: dist.reduce_scatter(torch.empty(4, dtype=torch.int32),
                                     [torch.ones(4, dtype=torch.int32)] * world, op=RO.BAND),
         ValueError, "reduce op 5 \\(BAND, BOR or BXOR\\) is not supported here"),
        (lambda: dist.all_reduce_coalesced([torch.ones(4, dtype=torch.int64)], op=RO.BOR),
         ValueError, "is not supported here; all_reduce and reduce take it"),
        (lambda: dist.broadcast(x, src=world + 3), ValueError,
         f"src={world + 3} is not a rank of this group"),
        (lambda: dist.all_gather([torch.empty(8)] * (world + 1), x), ValueError,
         f"tensor_list holds {world + 1} tensors, the group has {world} ranks"),
        (lambda: dist.all_gather([torch.empty(7)] * world, x), ValueError,
         "tensor_list\\[0\\] has 7 elements, the input has 8"),
        # (torch's Python layer refuses mixed dtypes first: call the group itself.)
        (lambda: pg.allgather([[torch.empty(8, dtype=torch.int32)] * world], [x]), TypeError,
         "tensor_list\\[0\\] has dtype Int, the input has Float"),
        (lambda: dist._all_gather_base(torch.empty(8 * world + 1), x), ValueError,
         f"output has {8 * world + 1} elements, expected world size {world} x input's 8"),
        (lambda: dist._reduce_scatter_base(torch.empty(3), torch.empty(3 * world + 2)),
         ValueError, f"input has {3 * world + 2} elements, expected world size {world}"),
        (lambda: dist.reduce_scatter(torch.empty(3), [torch.empty(4)] * world), ValueError,
         "input_list\\[0\\] has 4 elements, the output has 3"),
        # (The group itself: torch 2.x's dist.send and dist.recv check these first.)
        (lambda: pg.send([x], rank, 0), ValueError, f"dst={rank} is this rank"),
        (lambda: pg.recv([x], world + 1, 0), ValueError, "is not a rank of this group"),
    ]
    for i, (call, error, text) in enumerate(cases):
        with pytest.raises(error, match=text):
            print(f"case {i}: expects {error.__name__} {text!r}", flush=True)
            call()
    # Still usable, and nothing of the refused calls was sent.
    t = torch.full((5,), float(rank))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((5,), float(sum(range(world)))))
    dist.destroy_process_group()


def test_bad_input_is_refused():
    run_ranks(_bad_input, 2, timeout=60)

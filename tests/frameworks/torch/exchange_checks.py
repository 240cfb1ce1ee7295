"""Element-by-element checks of gather, scatter, all_to_all (list and single, with and without
split sizes), all_gather_coalesced and the object collectives built on them.

Every rank can regenerate any rank's input (collective_checks.rank_input), so each output is
checked against the exact tensor the sender holds; outputs are poisoned first. The same checks
run over gloo (the reference behaviour) and over Braid.
"""

import torch
import torch.distributed as dist

from collective_checks import assert_same, rank_input

SIZES = [0, 1, 7, 1031]


def poisoned_like(t):
    if t.dtype == torch.bool:
        return torch.ones_like(t)
    return torch.full_like(t, 13)


def check_gather(rank, world):
    for dtype in (torch.float32, torch.int64, torch.uint8):
        for n in SIZES:
            mine = rank_input(rank, n, dtype, salt=11)
            for root in range(world):
                outs = [poisoned_like(mine) for _ in range(world)] if rank == root else None
                dist.gather(mine, gather_list=outs, dst=root)
                if rank == root:
                    for p in range(world):
                        assert_same(outs[p], rank_input(p, n, dtype, salt=11),
                                    f"gather {dtype} n={n} root={root}: from rank {p}")


def check_gather_strided(rank, world):
    """The root's gather_list and scatter_list may be strided views (columns of one tensor)."""
    n = 1031
    mine = rank_input(rank, n, torch.float32, salt=17)
    for root in range(world):
        grid = torch.full((n, world), 13.0)
        outs = [grid[:, p] for p in range(world)] if rank == root else None
        dist.gather(mine, gather_list=outs, dst=root)
        if rank == root:
            for p in range(world):
                assert_same(grid[:, p].contiguous(), rank_input(p, n, torch.float32, salt=17),
                            f"gather into a strided column, root={root}: from rank {p}")
        src = torch.stack([rank_input(root, n, torch.float32, salt=200 + p)
                           for p in range(world)], dim=1)  # column p goes to rank p
        got = torch.full((n,), 13.0)
        dist.scatter(got, scatter_list=[src[:, p] for p in range(world)] if rank == root
                     else None, src=root)
        assert_same(got, rank_input(root, n, torch.float32, salt=200 + rank),
                    f"scatter from strided columns, root={root}")


def check_scatter(rank, world):
    for dtype in (torch.float32, torch.int32, torch.int8):
        for n in SIZES:
            for root in range(world):
                parts = ([rank_input(root, n, dtype, salt=100 + p) for p in range(world)]
                         if rank == root else None)
                got = poisoned_like(rank_input(rank, n, dtype))
                dist.scatter(got, scatter_list=parts, src=root)
                assert_same(got, rank_input(root, n, dtype, salt=100 + rank),
                            f"scatter {dtype} n={n} root={root}")


def _part(sender, receiver, rows, cols, dtype):
    """The rows `sender` sends `receiver` in all_to_all: exact and different for every pair."""
    if rows == 0:
        return torch.empty((0, cols), dtype=dtype)
    return rank_input(sender, rows * cols, dtype, salt=1000 + receiver).view(rows, cols)


def check_all_to_all_single(rank, world):
    cols = 3
    for dtype in (torch.float32, torch.int64):
        # Equal parts (no split sizes) of 0, 1 and 5 rows each.
        for rows in (0, 1, 5):
            inp = torch.cat([_part(rank, p, rows, cols, dtype) for p in range(world)])
            out = poisoned_like(inp)
            dist.all_to_all_single(out, inp)
            want = torch.cat([_part(p, rank, rows, cols, dtype) for p in range(world)])
            assert_same(out, want, f"all_to_all_single {dtype} rows={rows}")
        # Uneven split sizes, zeros included: rank s sends (s + 2 * r) % 3 rows to rank r.
        rows_of = lambda s, r: (s + 2 * r) % 3  # noqa: E731
        inp = torch.cat([_part(rank, p, rows_of(rank, p), cols, dtype) for p in range(world)])
        want = torch.cat([_part(p, rank, rows_of(p, rank), cols, dtype) for p in range(world)])
        out = poisoned_like(want)
        dist.all_to_all_single(out, inp, output_split_sizes=[rows_of(p, rank) for p in range(world)],
                               input_split_sizes=[rows_of(rank, p) for p in range(world)])
        assert_same(out, want, f"all_to_all_single {dtype} with split sizes")


def check_all_to_all(rank, world):
    for n in (0, 1, 1031):
        ins = [rank_input(rank, n + p, torch.float32, salt=2000 + p) for p in range(world)]
        outs = [poisoned_like(rank_input(p, n + rank, torch.float32)) for p in range(world)]
        dist.all_to_all(outs, ins)
        for p in range(world):
            assert_same(outs[p], rank_input(p, n + rank, torch.float32, salt=2000 + rank),
                        f"all_to_all n={n}: from rank {p}")


def check_all_gather_coalesced(rank, world):
    # torch refuses mixed dtypes in one call (for every backend): one dtype per call.
    for dtype in (torch.float32, torch.int64):
        _all_gather_coalesced(rank, world, dtype)


def _all_gather_coalesced(rank, world, dtype):
    shapes = [(0,), (1,), (7, 3), (1031,)]
    dtypes = [dtype] * len(shapes)
    ins = [rank_input(rank, torch.Size(s).numel(), d, salt=3000 + i).view(s)
           for i, (s, d) in enumerate(zip(shapes, dtypes))]
    # One list per rank, each holding that rank's tensors (torch's layout).
    outs = [[poisoned_like(t) for t in ins] for _ in range(world)]
    dist.all_gather_coalesced(outs, ins)
    for i, (s, d) in enumerate(zip(shapes, dtypes)):
        for p in range(world):
            want = rank_input(p, torch.Size(s).numel(), d, salt=3000 + i).view(s)
            assert_same(outs[p][i], want, f"all_gather_coalesced tensor {i}: from rank {p}")


def check_object_collectives(rank, world):
    mine = {"rank": rank, "data": list(range(rank * 3)), "text": "x" * (rank * 1000 + 1)}
    want = [{"rank": p, "data": list(range(p * 3)), "text": "x" * (p * 1000 + 1)}
            for p in range(world)]
    got = [None] * world
    dist.all_gather_object(got, mine)
    assert got == want, "all_gather_object"
    for root in range(world):
        got = [None] * world if rank == root else None
        dist.gather_object(mine, got, dst=root)
        if rank == root:
            assert got == want, f"gather_object to {root}"
        out = [None]
        dist.scatter_object_list(out, want if rank == root else None, src=root)
        assert out[0] == want[rank], f"scatter_object_list from {root}"
        objs = [want[root]] if rank == root else [None]
        dist.broadcast_object_list(objs, src=root)
        assert objs[0] == want[root], f"broadcast_object_list from {root}"


def check_sparse_all_reduce(rank, world):
    """all_reduce(SUM) of sparse COO tensors: overlapping and disjoint indices, a rank with no
    entries, uncoalesced input (an index twice), and a hybrid tensor (a dense dimension)."""
    def sparse_of(r, shape, dense):
        g = torch.Generator().manual_seed(4242 + r)
        nnz = 0 if r == 1 else 3 + 2 * r
        idx = torch.stack([torch.randint(0, s, (nnz,), generator=g) for s in shape])
        if nnz:
            idx[:, -1] = idx[:, 0]  # one index twice: the input is not coalesced
        vals = torch.randint(-9, 10, (nnz, *dense), generator=g).to(torch.float32)
        return torch.sparse_coo_tensor(idx, vals, (*shape, *dense))

    for shape, dense in (((50,), ()), ((7, 9), ()), ((11,), (3,))):
        mine = sparse_of(rank, shape, dense)
        want = sum(sparse_of(r, shape, dense).to_dense() for r in range(world))
        dist.all_reduce(mine)
        assert mine.is_sparse, "sparse all_reduce: the result is no longer sparse"
        assert_same(mine.to_dense(), want, f"sparse all_reduce shape {shape} dense {dense}")


# gloo (torch 1.13) has no list-form all_to_all, and scatters a strided scatter_list element as
# if it were contiguous (wrong data): its reference run leaves those checks out.
GLOO_LACKS = (check_all_to_all, check_gather_strided)
ALL = (check_gather, check_gather_strided, check_scatter, check_all_to_all_single, check_all_to_all,
       check_all_gather_coalesced, check_object_collectives, check_sparse_all_reduce)

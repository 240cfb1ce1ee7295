"""Element-by-element checks of the Braid process group's collectives against references built
from every rank's inputs (each rank can regenerate any rank's input from its seed).

Inputs are small integers or halves (products: powers of two), so sums, products, minima and
maxima are exact in every dtype whatever the reduction order: the reference is exact and the
comparison is bitwise. AVG is checked against the op's definition, NCCL's: for floats each
input times 1/world rounded to the dtype (through float32 but for float64), each product rounded
to the dtype, then summed (a float AVG's inputs are world times the values above, so the products
are those values and the sum is exact); for integers the sum divided and truncated.
"""

import torch
import torch.distributed as dist

RO = dist.ReduceOp
ALLREDUCE_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
                    torch.int64]
MOVE_DTYPES = ALLREDUCE_DTYPES + [torch.int8, torch.uint8, torch.bool]
OPS = [RO.SUM, RO.AVG, RO.PRODUCT, RO.MIN, RO.MAX]
# 0, 1, primes; 40009 float32 elements (156 KiB) take the ring path, the small ones direct/tree.
SIZES = [0, 1, 7, 1031, 40009]


def rank_input(rank, n, dtype, op=RO.SUM, salt=0, world=1):
    if op == RO.AVG and dtype.is_floating_point:
        return (rank_input(rank, n, dtype, RO.SUM, salt).to(torch.float64) * world).to(dtype)
    g = torch.Generator().manual_seed(7919 * rank + 31 * n + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if op == RO.PRODUCT:
        # +-1 and +-2 (+-0.5 for floats): products of <= 3 ranks are exact in every dtype.
        choices = torch.tensor([-2.0, -1.0, 1.0, 2.0] if not dtype.is_floating_point
                               else [-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], dtype=torch.float64)
        return choices[torch.randint(0, len(choices), (n,), generator=g)].to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 60, (n,), generator=g).to(dtype)
    values = torch.randint(-40, 41, (n,), generator=g).to(torch.float64)
    if dtype.is_floating_point:
        values = values / 4  # quarters in [-10, 10]: exact in bf16 and any sum of 3 ranks too
    return values.to(dtype)


def reference_reduce(inputs, op, dtype):
    stacked = torch.stack([x.to(torch.float64) for x in inputs])
    n = len(inputs)
    if op == RO.SUM:
        return stacked.sum(0).to(dtype)
    if op == RO.PRODUCT:
        return stacked.prod(0).to(dtype)
    if op == RO.MIN:
        return stacked.min(0).values.to(dtype)
    if op == RO.MAX:
        return stacked.max(0).values.to(dtype)
    assert op == RO.AVG
    if not dtype.is_floating_point:
        return torch.div(stacked.sum(0).to(torch.int64), n, rounding_mode="trunc").to(dtype)
    inverse = torch.tensor(1.0 / n, dtype=torch.float64)
    if dtype != torch.float64:
        inverse = inverse.to(torch.float32)
    scalar = inverse.to(dtype).to(torch.float64)
    return (stacked * scalar).to(dtype).to(torch.float64).sum(0).to(dtype)


def assert_same(actual, expected, what):
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    same = actual.view(-1) == expected.view(-1)
    if actual.dtype.is_floating_point:
        same |= torch.isnan(actual.view(-1)) & torch.isnan(expected.view(-1))
    if not bool(same.all()):
        i = int((~same).nonzero()[0])
        raise AssertionError(f"{what}: element {i} is {actual.view(-1)[i].item()}, expected "
                             f"{expected.view(-1)[i].item()} ({int((~same).sum())} differ)")


def poison(n, dtype):
    """An output buffer filled with a value no correct result has (results are checked whole)."""
    if dtype == torch.bool:
        return torch.ones(n, dtype=dtype)
    return torch.full((n,), 77, dtype=dtype)


def check_allreduce(rank, world):
    for dtype in ALLREDUCE_DTYPES:
        for op in OPS:
            for n in SIZES:
                inputs = [rank_input(r, n, dtype, op, world=world) for r in range(world)]
                t = inputs[rank].clone()
                work = dist.all_reduce(t, op=op, async_op=True)
                value = work.get_future().wait()
                expected = reference_reduce(inputs, op, dtype)
                what = f"all_reduce {dtype} {op} n={n} rank {rank}/{world}"
                assert_same(t, expected, what)
                assert value[0] is t or value[0].data_ptr() == t.data_ptr(), what


def check_premul_sum(rank, world):
    """PREMUL_SUM (torch.distributed._make_nccl_premul_sum): every input scaled by the factor,
    then summed; all_reduce, reduce and reduce_scatter_tensor, a number and a tensor factor
    (torch 1.13 takes a list of one tensor per device, 2.x one tensor)."""
    # A tensor factor: a list of one per device in torch 1.13, one tensor in 2.x.
    tensor_factor = torch.tensor([0.5])
    if int(torch.__version__.split(".")[0]) < 2:
        tensor_factor = [tensor_factor]
    cases = [(torch.float32, 0.5), (torch.float64, 0.25), (torch.bfloat16, 2.0),
             (torch.int32, 3.0), (torch.float32, tensor_factor)]
    for dtype, factor in cases:
        f = factor if isinstance(factor, float) else float(torch.as_tensor(factor[0]).item())
        op = dist._make_nccl_premul_sum(factor)
        for n in (0, 1, 1031):
            inputs = [rank_input(r, n * world, dtype, salt=9) for r in range(world)]
            scaled = torch.stack([x.to(torch.float64) * f for x in inputs]).sum(0).to(dtype)
            what = f"PREMUL_SUM {dtype} x{f} n={n}"
            t = inputs[rank].clone()
            dist.all_reduce(t, op=op)
            assert_same(t, scaled, f"all_reduce {what}")
            t = inputs[rank].clone()
            dist.reduce(t, dst=world - 1, op=op)
            if rank == world - 1:
                assert_same(t, scaled, f"reduce {what}")
            out = torch.full((n,), 7, dtype=dtype)
            reduce_scatter = getattr(dist, "reduce_scatter_tensor", None) or \
                dist._reduce_scatter_base  # torch 1.13's name
            reduce_scatter(out, inputs[rank].clone(), op=op)
            assert_same(out, scaled[rank * n:(rank + 1) * n], f"reduce_scatter {what}")


BITWISE_DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64]
BOOL_OPS = [RO.SUM, RO.PRODUCT, RO.MIN, RO.MAX, RO.BAND, RO.BOR, RO.BXOR]


def bits_input(rank, n, dtype, salt=0):
    """Every bit pattern of the dtype, different on every rank."""
    g = torch.Generator().manual_seed(104729 * rank + 17 * n + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (n,), generator=g, dtype=torch.int64).to(dtype)


def reference_logical(inputs, op):
    """What gloo computes: bitwise ops folded in rank order; bools as logical values (SUM and
    MAX: or; PRODUCT and MIN: and)."""
    acc = inputs[0].clone()
    for x in inputs[1:]:
        if op in (RO.BAND, RO.PRODUCT, RO.MIN):
            acc = acc & x
        elif op in (RO.BOR, RO.SUM, RO.MAX):
            acc = acc | x
        else:
            acc = acc ^ x
    return acc


def check_gloo_parity(rank, world):
    """What gloo computes that Braid once refused: bool reductions, BAND/BOR/BXOR on integers,
    and all_reduce, reduce and broadcast of non-contiguous tensors (element by element)."""
    for n in SIZES:
        for op in BOOL_OPS:
            inputs = [bits_input(r, n, torch.bool, salt=op_salt(op)) for r in range(world)]
            t = inputs[rank].clone()
            dist.all_reduce(t, op=op)
            assert_same(t, reference_logical(inputs, op), f"all_reduce bool {op} n={n}")
            assert t.view(torch.uint8).max().item() <= 1 if n else True  # real bools
        for dtype in BITWISE_DTYPES:
            for op in (RO.BAND, RO.BOR, RO.BXOR):
                inputs = [bits_input(r, n, dtype, salt=op_salt(op)) for r in range(world)]
                t = inputs[rank].clone()
                dist.all_reduce(t, op=op)
                assert_same(t, reference_logical(inputs, op), f"all_reduce {dtype} {op} n={n}")
    for root in range(world):
        for dtype, op in ((torch.bool, RO.SUM), (torch.bool, RO.BXOR), (torch.int32, RO.BXOR),
                          (torch.uint8, RO.BAND)):
            inputs = [bits_input(r, 1031, dtype, salt=root) for r in range(world)]
            t = inputs[rank].clone()
            dist.reduce(t, dst=root, op=op)
            expected = reference_logical(inputs, op) if rank == root else inputs[rank]
            assert_same(t, expected, f"reduce {dtype} {op} dst={root} rank {rank}")
    # Strided: a transposed matrix, and every other element of a vector; the elements around
    # the view's must stay as they were.
    for dtype in (torch.float32, torch.int64, torch.bool):
        for op in ((RO.SUM, RO.MAX) if dtype != torch.bool else (RO.SUM, RO.BXOR)):
            inputs = [rank_input(r, 7 * 13, dtype, salt=5).view(7, 13) for r in range(world)]
            base = inputs[rank].clone()
            t = base.t()
            assert not t.is_contiguous()
            dist.all_reduce(t, op=op)
            expected = (reference_logical([x.t() for x in inputs], op) if dtype == torch.bool
                        else reference_reduce([x.t() for x in inputs], op, dtype))
            assert_same(t.contiguous(), expected.contiguous(), f"all_reduce strided {dtype} {op}")
        whole = [rank_input(r, 2 * 1031, dtype, salt=6) for r in range(world)]
        mine = whole[rank].clone()
        every_other = mine[::2]
        dist.all_reduce(every_other, op=RO.MAX)
        expected = (reference_logical([x[::2] for x in whole], RO.MAX) if dtype == torch.bool
                    else reference_reduce([x[::2] for x in whole], RO.MAX, dtype))
        assert_same(mine[::2].contiguous(), expected, f"all_reduce every other {dtype}")
        assert_same(mine[1::2].contiguous(), whole[rank][1::2].contiguous(),
                    f"all_reduce every other {dtype}: the elements between")
        for root in range(world):
            mine = whole[rank].clone()
            dist.broadcast(mine[::2], src=root)
            assert_same(mine[::2].contiguous(), whole[root][::2].contiguous(),
                        f"broadcast every other {dtype} src={root}")
            assert_same(mine[1::2].contiguous(), whole[rank][1::2].contiguous(),
                        f"broadcast every other {dtype} src={root}: the elements between")
            mine = whole[rank].clone()
            dist.reduce(mine[::2], dst=root, op=RO.MAX)
            if rank == root:
                assert_same(mine[::2].contiguous(), expected, f"reduce every other {dtype}")


def check_gloo_parity_gathers(rank, world):
    """The gathers' and reduce-scatters' strided inputs, and bool reduce-scatters (gloo computes
    both), element by element."""
    whole = [rank_input(r, 2 * 8 * world, torch.float32, salt=8) for r in range(world)]
    out = [torch.full((8,), 77.0) for _ in range(world)]
    dist.all_gather(out, whole[rank][: 2 * 8:2])
    for r in range(world):
        assert_same(out[r], whole[r][: 2 * 8:2].contiguous(), f"all_gather strided from {r}")
    flat = torch.full((8 * world,), 77.0)
    all_gather_tensor = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    all_gather_tensor(flat, whole[rank][: 2 * 8:2])
    assert_same(flat, torch.cat([w[: 2 * 8:2] for w in whole]), "all_gather_into_tensor strided")
    reduce_scatter = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    got = torch.full((8,), 77.0)
    reduce_scatter(got, whole[rank][::2], op=RO.MAX)
    expected = reference_reduce([w[::2] for w in whole], RO.MAX, torch.float32)
    assert_same(got, expected[rank * 8:(rank + 1) * 8], "reduce_scatter_tensor strided")
    for op in (RO.SUM, RO.PRODUCT, RO.MIN, RO.MAX):
        bits = [bits_input(r, 5 * world, torch.bool, salt=op_salt(op)) for r in range(world)]
        mine = torch.ones(5, dtype=torch.bool)
        dist.reduce_scatter(mine, list(bits[rank].split(5)), op=op)
        expected = reference_logical(bits, op)[rank * 5:(rank + 1) * 5]
        assert_same(mine, expected, f"reduce_scatter bool {op}")
        mine = torch.zeros(5, dtype=torch.bool)
        reduce_scatter(mine, bits[rank].clone(), op=op)
        assert_same(mine, expected, f"reduce_scatter_tensor bool {op}")


def op_salt(op):
    return [RO.SUM, RO.PRODUCT, RO.MIN, RO.MAX, RO.BAND, RO.BOR, RO.BXOR].index(op)


def check_allreduce_coalesced(rank, world):
    inputs = [[rank_input(r, n, torch.float32, salt=1) for n in (5, 1031)] for r in range(world)]
    mine = [x.clone() for x in inputs[rank]]
    dist.all_reduce_coalesced(mine, op=RO.MAX)
    for i, t in enumerate(mine):
        assert_same(t, reference_reduce([inputs[r][i] for r in range(world)], RO.MAX,
                                        torch.float32), f"all_reduce_coalesced tensor {i}")


def check_broadcast(rank, world):
    for dtype in MOVE_DTYPES:
        for n in SIZES:
            for root in range(world):
                t = rank_input(rank, n, dtype, salt=2)
                dist.broadcast(t, src=root)
                assert_same(t, rank_input(root, n, dtype, salt=2),
                            f"broadcast {dtype} n={n} src={root} rank {rank}")


def check_reduce(rank, world):
    for n in (1, 1031):
        for root in range(world):
            inputs = [rank_input(r, n, torch.int64, salt=3) for r in range(world)]
            t = inputs[rank].clone()
            dist.reduce(t, dst=root, op=RO.SUM)
            if rank == root:
                assert_same(t, reference_reduce(inputs, RO.SUM, torch.int64),
                            f"reduce n={n} dst={root}")


def check_all_gather(rank, world):
    for dtype in MOVE_DTYPES:
        for n in SIZES:
            inputs = [rank_input(r, n, dtype, salt=4) for r in range(world)]
            # List form, with strided outputs (every other element of a larger buffer).
            backing = [poison(2 * n, dtype) for _ in range(world)]
            outs = [b[::2] for b in backing]
            dist.all_gather(outs, inputs[rank])
            for r in range(world):
                assert_same(outs[r], inputs[r], f"all_gather {dtype} n={n} part {r}")
                assert_same(backing[r][1::2], poison(n, dtype), "all_gather wrote between strides")
            # Base form: one flat output.
            flat = poison(world * n, dtype)
            dist._all_gather_base(flat, inputs[rank])
            assert_same(flat, torch.cat(inputs), f"_all_gather_base {dtype} n={n}")


def check_reduce_scatter(rank, world):
    for dtype in ALLREDUCE_DTYPES:
        for op in (RO.SUM, RO.MAX, RO.AVG):
            for n in SIZES:
                inputs = [rank_input(r, world * n, dtype, op, salt=5, world=world)
                          for r in range(world)]
                expected = reference_reduce(inputs, op, dtype)[rank * n:(rank + 1) * n]
                out = poison(n, dtype)
                dist._reduce_scatter_base(out, inputs[rank].clone(), op=op)
                assert_same(out, expected, f"_reduce_scatter_base {dtype} {op} n={n}")
                out = poison(n, dtype)
                dist.reduce_scatter(out, list(inputs[rank].clone().chunk(world)) if n else
                                    [torch.empty(0, dtype=dtype) for _ in range(world)], op=op)
                assert_same(out, expected, f"reduce_scatter (list) {dtype} {op} n={n}")


def check_send_recv(rank, world):
    if world == 1:
        return
    for n in (1, 7, 1031, 300007):  # 300007 float32: 1.2 MiB, several FIFO slots
        right, left = (rank + 1) % world, (rank - 1) % world
        mine = rank_input(rank, n, torch.float32, salt=6)
        got = poison(n, torch.float32)
        # Even ranks send first, odd ranks receive first: no cycle of blocked sends.
        if rank % 2 == 0:
            dist.send(mine, right)
            dist.recv(got, left)
        else:
            dist.recv(got, left)
            dist.send(mine, right)
        assert_same(got, rank_input(left, n, torch.float32, salt=6), f"recv n={n} from {left}")


def check_future_chain(rank, world):
    t = torch.full((3,), float(rank + 1))
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    total = world * (world + 1) / 2
    assert_same(doubled, torch.full((3,), 2 * total), "future.then on all_reduce")


def check_barrier(rank, world):
    import time

    store = dist.distributed_c10d._get_default_store()
    for round_ in range(3):
        if rank == world - 1:
            time.sleep(0.2)  # the last rank arrives late: nobody may leave before it
        store.add(f"arrived{round_}", 1)
        dist.barrier()
        assert store.add(f"arrived{round_}", 0) == world, "barrier returned before every rank"


def check_subgroup(rank, world):
    """new_group: a second Braid communicator over some ranks (its own store prefix and id)."""
    members = sorted({0, world - 1})
    group = dist.new_group(ranks=members, backend="braid")
    if rank in members:
        t = torch.full((1031,), float(rank + 1))
        dist.all_reduce(t, group=group)
        assert_same(t, torch.full((1031,), float(sum(m + 1 for m in members))),
                    f"all_reduce on subgroup {members}")
    dist.barrier()

"""Every collective of braid.Communicator as cases a rank can issue and check by itself: inputs
are a deterministic function of (case, rank), so each rank builds every rank's inputs, computes
the float64 reference and checks its own output element by element. Outputs are poisoned (0xA5
bytes) before each call, and out-of-place calls must leave their input untouched.

Values are small integers (|x| <= 3), so sums, products and extrema are exact in every type. avg
is NCCL's: for floats each input times 1/n rounded to the type, each product rounded, summed (the
inputs of a float avg are n times such integers, so the products are those integers); checked
within one unit in the last place. Integer avg is the sum truncated toward zero after dividing."""

import itertools

import numpy as np

import braid

COLLECTIVES = ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "alltoall",
               "gather", "scatter", "send_recv"]
REDUCING = {"all_reduce", "reduce", "reduce_scatter"}
IN_PLACE = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "gather",
            "scatter"}
DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
          "bfloat16"]
OPS = ["sum", "prod", "max", "min", "avg"]
SMALL_COUNTS = [0, 1, 13]
LARGE_COUNT = 100_003  # a prime; several FIFO slots for every type


def to_bfloat16_bits(values):
    """float64 values -> bfloat16 bit patterns in uint16 (round to nearest even)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def from_bfloat16_bits(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def storage_dtype(dtype):
    return np.dtype(np.uint16) if dtype == "bfloat16" else np.dtype(dtype)


def encode(values, dtype):
    """float64 values -> an array of `dtype` (bfloat16 as bits)."""
    if dtype == "bfloat16":
        return to_bfloat16_bits(values)
    return np.asarray(values).astype(dtype)


def decode(array, dtype):
    if dtype == "bfloat16":
        return from_bfloat16_bits(array).astype(np.float64)
    return array.astype(np.float64)


def poisoned(count, dtype):
    out = np.empty(count, dtype=storage_dtype(dtype))
    out.view(np.uint8)[:] = 0xA5
    return out


class Case:
    def __init__(self, collective, dtype, op, count, in_place, seed):
        self.collective, self.dtype, self.op = collective, dtype, op
        self.count, self.in_place, self.seed = count, in_place, seed

    def __repr__(self):
        return "%s(%s, op=%s, count=%d, %s)" % (self.collective, self.dtype, self.op, self.count,
                                                 "in place" if self.in_place else "out of place")


def cases(quick=False):
    """Every collective x dtype (x op) x count x placement. quick: the large count for two
    types only."""
    seed = 0
    for collective in COLLECTIVES:
        ops = OPS if collective in REDUCING else ["sum"]
        placements = [False, True] if collective in IN_PLACE else [False]
        for dtype, op, count, in_place in itertools.product(DTYPES, ops, SMALL_COUNTS,
                                                            placements):
            seed += 1
            yield Case(collective, dtype, op, count, in_place, seed)
        for dtype in (["float32", "int64"] if quick else DTYPES):
            seed += 1
            yield Case(collective, dtype, "sum", LARGE_COUNT, False, seed)
            if collective in REDUCING and not quick:
                seed += 1
                yield Case(collective, dtype, "max", LARGE_COUNT, False, seed)


def is_float_avg(case):
    return case.op == "avg" and "int" not in case.dtype


def round_to(values, dtype):
    """float64 values rounded to `dtype` (nearest even), as float64."""
    return decode(encode(values, dtype), dtype)


def average_scalar(dtype, n):
    """ncclAvg's factor, as NCCL computes it: 1/n in double, through float but for float64."""
    if dtype == "float64":
        return 1.0 / n
    return float(round_to(np.array([np.float32(1.0 / n)], dtype=np.float64), dtype)[0])


def rank_values(case, rank, count, nranks):
    rng = np.random.default_rng([case.seed, rank])
    unsigned = case.dtype.startswith("uint")
    values = rng.integers(0 if unsigned else -3, 4, count).astype(np.float64)
    return values * nranks if is_float_avg(case) else values


def reduce_reference(case, stacked):
    n = stacked.shape[0]
    if is_float_avg(case):
        return round_to(stacked * average_scalar(case.dtype, n), case.dtype).sum(axis=0)
    if case.op == "sum":
        return stacked.sum(axis=0)
    if case.op == "prod":
        return stacked.prod(axis=0)
    if case.op == "max":
        return stacked.max(axis=0)
    if case.op == "min":
        return stacked.min(axis=0)
    return np.trunc(stacked.sum(axis=0) / n)  # integer avg


class RankCase:
    """One rank's share of a case: its buffers, the call, the expected output and the check."""

    def __init__(self, case, rank, nranks):
        self.case, self.rank, self.nranks = case, rank, nranks
        self.root = nranks - 1
        c, n = case.count, nranks
        send_count = c * n if case.collective in ("reduce_scatter", "alltoall", "scatter") else c
        values = [rank_values(case, r, send_count, n) for r in range(n)]
        self.send = encode(values[rank], case.dtype)
        self.send_before = self.send.copy()
        self.expected = self._reference(values)
        self.dtype_arg = "bfloat16" if case.dtype == "bfloat16" else None
        self.out = None

    def _reference(self, values):
        case, r, n, c = self.case, self.rank, self.nranks, self.case.count
        name = case.collective
        if name == "all_reduce":
            return reduce_reference(case, np.stack(values))
        if name == "reduce":
            return reduce_reference(case, np.stack(values)) if r == self.root else None
        if name == "broadcast":
            return values[self.root]
        if name == "all_gather":
            return np.concatenate(values)
        if name == "reduce_scatter":
            return reduce_reference(case, np.stack(values))[r * c:(r + 1) * c]
        if name == "alltoall":
            return np.concatenate([values[i][r * c:(r + 1) * c] for i in range(n)])
        if name == "gather":
            return np.concatenate(values) if r == self.root else None
        if name == "scatter":
            return values[self.root][r * c:(r + 1) * c]
        if name == "send_recv":
            return values[(r - 1) % n]
        raise AssertionError(name)

    def issue(self, comm):
        """Issues this rank's call (inside a group when the caller drives several ranks)."""
        case, r, n, c, root = self.case, self.rank, self.nranks, self.case.count, self.root
        kw = {"dtype": self.dtype_arg}
        name, send = case.collective, self.send
        block = slice(r * c, (r + 1) * c)
        if name == "all_reduce":
            self.out = comm.all_reduce(send.copy() if case.in_place else send,
                                       None if case.in_place else poisoned(c, case.dtype),
                                       op=case.op, **kw)
        elif name == "broadcast":
            if case.in_place:
                self.out = comm.broadcast(send.copy(), root=root, **kw)
            else:
                self.out = comm.broadcast(send if r == root else None, poisoned(c, case.dtype),
                                          root=root, **kw)
        elif name == "reduce":
            if case.in_place:
                self.out = comm.reduce(send.copy(), op=case.op, root=root, **kw)
            else:
                self.out = comm.reduce(send, poisoned(c, case.dtype) if r == root else None,
                                       op=case.op, root=root, **kw)
        elif name == "all_gather":
            recv = poisoned(c * n, case.dtype)
            if case.in_place:
                recv[block] = send
                self.out = comm.all_gather(recv[block], recv, **kw)
            else:
                self.out = comm.all_gather(send, recv, **kw)
        elif name == "reduce_scatter":
            if case.in_place:
                buf = send.copy()
                self.out = comm.reduce_scatter(buf, buf[block], op=case.op, **kw)
            else:
                self.out = comm.reduce_scatter(send, poisoned(c, case.dtype), op=case.op, **kw)
        elif name == "alltoall":
            self.out = comm.alltoall(send, poisoned(c * n, case.dtype), **kw)
        elif name == "gather":
            if r == root:
                recv = poisoned(c * n, case.dtype)
                if case.in_place:
                    recv[root * c:(root + 1) * c] = send
                    send = recv[root * c:(root + 1) * c]
                self.out = comm.gather(send, recv, root=root, **kw)
            else:
                self.out = comm.gather(send, root=root, **kw)
        elif name == "scatter":
            if case.in_place and r == root:
                buf = send.copy()
                self.out = comm.scatter(buf, buf[block], root=root, **kw)
            else:
                self.out = comm.scatter(send if r == root else None, poisoned(c, case.dtype),
                                        root=root, **kw)
        elif name == "send_recv":
            recv = poisoned(c, case.dtype)
            with braid.group():
                comm.send(send, (r + 1) % n, **kw)
                comm.recv(recv, (r - 1) % n, **kw)
            self.out = recv
        else:
            raise AssertionError(name)

    def check(self):
        """None when the output is right, else a message naming the case, rank and element."""
        case = self.case
        where = "%r rank %d of %d" % (case, self.rank, self.nranks)
        if not case.in_place and not np.array_equal(self.send, self.send_before):
            return "%s: the input was modified" % where
        if self.expected is None:
            return None if self.out is None else "%s: expected no output, got one" % where
        if self.out is None:
            return "%s: no output" % where
        expected = encode(self.expected, case.dtype)
        got = np.asarray(self.out).reshape(-1)
        if got.shape != expected.shape:
            return "%s: output has shape %s, expected %s" % (where, got.shape, expected.shape)
        if got.size == 0:
            return None
        if is_float_avg(case):
            # One unit in the last place: compare the bit patterns as integers (same signs).
            width = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[got.itemsize]
            diff = np.abs(got.view(width).astype(np.int64) - expected.view(width).astype(np.int64))
            bad = np.nonzero(diff > 1)[0]
        else:
            bad = np.nonzero(got.view(np.uint8).reshape(got.size, -1) !=
                             expected.view(np.uint8).reshape(expected.size, -1))[0]
        if bad.size:
            i = int(bad[0])
            return "%s: element %d is %r, expected %r (%d elements differ)" % (
                where, i, decode(got[i:i + 1], case.dtype)[0],
                decode(expected[i:i + 1], case.dtype)[0], np.unique(bad).size)
        return None

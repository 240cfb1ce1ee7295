"""Communicator life cycle: ids, split (and leaving a split), non-blocking creation, timeouts,
barrier, the context manager, at 1-3 ranks."""

import numpy as np
import pytest

import braid
from braid import errors
from conftest import run_threads


def test_module_level():
    assert braid.version() == (2, 28, 9)
    uid = braid.get_unique_id()
    assert isinstance(uid, bytes) and len(uid) == 128
    assert issubclass(braid.BraidError, RuntimeError)


def leaves(nranks, rank):
    return nranks == 3 and rank == 1


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_split_by_parity(nranks):
    comms = braid.Communicator.init_all(nranks)

    def body(comm):
        r = comm.rank
        assert comm.size == nranks
        # Ranks of one parity form a communicator, ordered by descending key; at 3 ranks rank 1
        # leaves, so ranks 0 and 2 form one of size 2 (rank 2 first).
        color = braid.SPLIT_NOCOLOR if leaves(nranks, r) else r % 2
        child = comm.split(color, key=-r)
        if child is None:
            return r, None
        x = np.array([r], np.int64)
        child.all_reduce(x)
        result = (r, (child.rank, child.size, int(x[0])))
        child.destroy()
        return result

    results = dict(run_threads(comms, body))
    for r, child in results.items():
        if leaves(nranks, r):
            assert child is None
            continue
        members = [q for q in range(nranks) if q % 2 == r % 2 and not leaves(nranks, q)]
        assert child == (sorted(members, reverse=True).index(r), len(members), sum(members))
    for c in comms:
        c.destroy()


def test_non_blocking_creation_and_calls():
    uid = braid.get_unique_id()

    def body(rank):
        comm = braid.Communicator(2, uid, rank, blocking=False)
        comm.wait(timeout=30)
        assert comm.get_async_error() == errors.SUCCESS and not comm.blocking
        x = np.full(4, rank + 1.0)
        comm.all_reduce(x)  # completes before returning, as on a blocking communicator
        comm.destroy()
        return x

    for x in run_threads([0, 1], body):
        np.testing.assert_array_equal(x, np.full(4, 3.0))


def test_timeout_barrier_and_context_manager():
    comms = braid.Communicator.init_all(2)
    comms[0].timeout = 2.5
    assert comms[0].timeout == 2.5
    with pytest.raises(braid.BraidError, match=r"seconds"):
        comms[1].timeout = -1
    run_threads(comms, lambda c: c.barrier())
    assert "rank 0 of 2" in repr(comms[0])
    with comms[0], comms[1]:
        pass
    assert "destroyed" in repr(comms[0])

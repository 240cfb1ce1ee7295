"""Every collective x dtype x op x count, in place and out of place, at 1, 2 and 3 ranks made by
Communicator.init_all: once with one thread per rank, once with one thread driving every rank
inside braid.group(). Each output is checked element by element (collective_cases.py)."""

import pytest

import braid
from collective_cases import RankCase, cases
from conftest import run_threads


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_every_collective_one_thread_per_rank(nranks):
    comms = braid.Communicator.init_all(nranks)
    # The large count in every dtype at 2 ranks; at 1 and 3 ranks in two dtypes (3 threads on the
    # 2-core test machine make the full set slow, and the paths are the same).
    all_cases = list(cases(quick=nranks != 2))

    def rank_body(comm):
        failures = []
        for case in all_cases:
            rc = RankCase(case, comm.rank, nranks)
            rc.issue(comm)
            problem = rc.check()
            if problem:
                failures.append(problem)
        return failures

    failures = sum(run_threads(comms, rank_body), [])
    for c in comms:
        c.destroy()
    assert not failures, "%d wrong outputs, first: %s" % (len(failures), failures[:5])
    assert len(all_cases) > 1200


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_every_collective_one_thread_drives_all_ranks(nranks):
    comms = braid.Communicator.init_all(nranks)
    failures = []
    for case in cases(quick=True):
        shares = [RankCase(case, r, nranks) for r in range(nranks)]
        with braid.group():
            for comm, share in zip(comms, shares):
                share.issue(comm)
        failures += [p for p in (s.check() for s in shares) if p]
    for c in comms:
        c.destroy()
    assert not failures, "%d wrong outputs, first: %s" % (len(failures), failures[:5])

"""A failure inside a collective raises braid.BraidError with Braid's message; it never hangs:
a killed peer is noticed at once, a silent one at the communicator's deadline, and abort() from
another thread ends a blocked call."""

import multiprocessing
import threading
import time

import numpy as np
import pytest

import braid
import failing_rank


def run_failure(nranks, victim, how, comm_timeout):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    uid = braid.get_unique_id()
    procs = [ctx.Process(target=failing_rank.rank_main,
                         args=(nranks, r, uid, victim, how, comm_timeout, results))
             for r in range(nranks)]
    for p in procs:
        p.start()
    try:
        outcomes = [results.get(timeout=comm_timeout + 30) for _ in range(nranks - 1)]
    finally:
        procs[victim].kill()  # a silent victim would otherwise sleep on
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    return outcomes


@pytest.mark.parametrize("victim", [0, 2])
def test_killed_peer_raises(victim):
    # The deadline (30 s) is far above the bound checked, so the error comes from noticing the
    # death, not from the timeout.
    outcomes = run_failure(3, victim, "kill", comm_timeout=30)
    for rank, outcome, seconds, text in outcomes:
        assert outcome == "ncclRemoteError", (rank, outcome, text)
        assert seconds < 10, "rank %d took %.2f s to notice" % (rank, seconds)
        assert "ncclAllReduce" in text and ("exited" in text or "closed" in text), text


def test_silent_peer_raises_at_the_deadline():
    outcomes = run_failure(3, 1, "silent", comm_timeout=1.5)
    for rank, outcome, seconds, text in outcomes:
        assert outcome == "ncclRemoteError", (rank, outcome, text)
        assert 1.0 < seconds < 10, "rank %d raised after %.2f s" % (rank, seconds)
        assert "timed out" in text, text


def test_abort_from_another_thread_ends_a_blocked_call():
    comms = braid.Communicator.init_all(2)
    caught = []

    def lonely_rank():
        # Rank 1 never calls: rank 0 blocks until the abort.
        try:
            comms[0].all_reduce(np.ones(10, np.float32))
            caught.append(None)
        except braid.BraidError as e:
            caught.append(e)

    t = threading.Thread(target=lonely_rank, daemon=True)
    start = time.monotonic()
    t.start()
    time.sleep(0.3)
    comms[0].abort()
    t.join(10)
    assert not t.is_alive(), "abort() did not end the blocked all_reduce"
    assert isinstance(caught[0], braid.BraidError), caught
    assert "aborted" in caught[0].text, caught[0].text
    assert time.monotonic() - start < 5
    comms[1].abort()

"""Ranks for test_failures.py (multiprocessing targets must live in an importable module)."""

import os
import signal
import time

import numpy as np

import braid


def rank_main(nranks, rank, unique_id, victim, how, comm_timeout, results):
    """Every rank does one allreduce; then `victim` dies (how="kill") or stops calling
    (how="silent") while the others call a second one, which must raise BraidError.
    Puts (rank, outcome, seconds, text) on `results`."""
    try:
        comm = braid.Communicator(nranks, unique_id, rank, timeout=comm_timeout)
        x = np.ones(1000, np.float32)
        comm.all_reduce(x)
        assert x[0] == nranks
        if rank == victim:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(comm_timeout + 20)  # silent: alive, never calls again
            return
        start = time.monotonic()
        try:
            comm.all_reduce(x)
            results.put((rank, "no error", time.monotonic() - start, ""))
        except braid.BraidError as e:
            results.put((rank, e.code_name, time.monotonic() - start, e.text))
        comm.abort()
    except Exception as e:  # noqa: BLE001 - reported to the parent
        results.put((rank, "unexpected %r" % e, 0.0, ""))

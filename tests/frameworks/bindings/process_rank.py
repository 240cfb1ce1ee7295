"""A rank in its own process: runs the collective cases (collective_cases.py) and reports wrong
outputs. Used by test_collectives_processes.py through multiprocessing, and run directly under
braidrun (which sets RANK and WORLD_SIZE; every rank's get_unique_id() is then the same)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import braid  # noqa: E402
from collective_cases import RankCase, cases  # noqa: E402


def run_cases(comm):
    failures = []
    for case in cases(quick=True):
        rc = RankCase(case, comm.rank, comm.size)
        rc.issue(comm)
        problem = rc.check()
        if problem:
            failures.append(problem)
    return failures


def rank_main(nranks, rank, unique_id, results):
    """multiprocessing target: puts (rank, failures or an error string) on `results`."""
    try:
        with braid.Communicator(nranks, unique_id, rank, timeout=60) as comm:
            results.put((rank, run_cases(comm)))
    except Exception as e:  # noqa: BLE001 - reported to the parent
        results.put((rank, ["rank %d raised %r" % (rank, e)]))


if __name__ == "__main__":
    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    with braid.Communicator(nranks, braid.get_unique_id(), rank, timeout=60) as comm:
        problems = run_cases(comm)
    for p in problems[:10]:
        print(p)
    print("rank %d: %d wrong outputs" % (rank, len(problems)))
    sys.exit(1 if problems else 0)

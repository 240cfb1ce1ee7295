"""The collective cases with each rank in its own process (shared memory between processes):
started by multiprocessing (the unique id passed from the parent) and by braidrun (the id from
the launcher's environment)."""

import multiprocessing
import os
import subprocess
import sys

import pytest

import braid
import process_rank

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("nranks", [2, 3])
def test_every_collective_in_processes(nranks):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    uid = braid.get_unique_id()
    procs = [ctx.Process(target=process_rank.rank_main, args=(nranks, r, uid, results))
             for r in range(nranks)]
    for p in procs:
        p.start()
    reports = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0, "rank process exited with %s" % p.exitcode
    failures = sum((reports[r] for r in range(nranks)), [])
    assert not failures, "%d wrong outputs, first: %s" % (len(failures), failures[:5])


def test_every_collective_under_braidrun():
    braidrun = os.environ.get("BRAIDRUN")
    if not braidrun or not os.path.exists(braidrun):
        pytest.skip("BRAIDRUN (the path of build/bin/braidrun) is not set; CTest sets it")
    command = [braidrun, "-n", "3", sys.executable, os.path.join(HERE, "process_rank.py")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    for rank in range(3):
        assert "rank %d: 0 wrong outputs" % rank in run.stdout, run.stdout

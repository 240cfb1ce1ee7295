"""Runs a test body on N ranks, each a fresh process started by multiprocessing's forkserver.

The server imports torch once (about 2-3.5 s a process on these machines) and forks each rank
from that clean, single-threaded state: a rank starts as a spawned one would, with no thread or
library state of the test process, without importing torch again. Braid itself is imported by each
rank after the fork, so every rank's library starts its own threads.

Every rank gets MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE (torchrun's variables) and one intra-op
thread (the CI machine has two cores for all ranks). A rank that raises prints its traceback
and exits 1; the parent fails the test naming the rank, and kills every rank still running
after `timeout` seconds, so a hang is a failure, never a stuck CI job.
"""

import multiprocessing
import os
import socket
import sys
import time
import traceback


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(body, rank, world_size, args, env):
    os.environ.update(env)
    os.environ["RANK"] = str(rank)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world_size)
    try:
        import torch

        torch.set_num_threads(1)
        body(rank, world_size, *args)
    except BaseException:
        sys.stderr.write(f"rank {rank} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_ranks(body, world_size, *args, timeout=90, killed=(), env=None):
    """Runs body(rank, world_size, *args) on `world_size` ranks and waits for all.

    `killed`: ranks expected to die by a signal (fault tests); every other rank must exit 0.
    """
    rank_env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "OMP_NUM_THREADS": "1",
    }
    rank_env.update(env or {})
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed"])
    procs = [
        ctx.Process(target=_rank_main, args=(body, r, world_size, args, rank_env))
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for r in hung:
        procs[r].kill()
        procs[r].join()
    assert not hung, f"ranks {hung} still running after {timeout} s (killed)"
    for r, p in enumerate(procs):
        if r in killed:
            assert p.exitcode < 0, f"rank {r} should have been killed, exit code {p.exitcode}"
        else:
            assert p.exitcode == 0, f"rank {r} exited with code {p.exitcode} (traceback above)"

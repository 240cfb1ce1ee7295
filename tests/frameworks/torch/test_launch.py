"""torchrun-style launching: the ranks read RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT and
meet through torch's store on MASTER_PORT (Braid's own rendezvous must not take that port).
Launchers: torch's (python3 -m torch.distributed.run) and Braid's braidrun."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "launch_worker.py")
WORLD = 3


def _run(cmd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{cmd[:4]} exited {done.returncode}:\n{output}"
    for r in range(WORLD):
        assert f"rank {r} ok" in done.stdout, output


def test_torchrun():
    # torch 1.13's launcher fails on Python 3.11 with its default --redirects/--tee ("0"
    # parses to None there); a per-rank mapping parses.
    _run([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
          str(WORLD), "--redirects", "0:1", "--tee", "0:1", "--master_addr", "127.0.0.1",
          "--master_port", str(free_port()), WORKER])


def test_braidrun():
    braidrun = os.environ.get("BRAIDRUN")
    if not braidrun or not os.path.exists(braidrun):
        pytest.skip("BRAIDRUN (the path of build/bin/braidrun) is not set")
    _run([braidrun, "-n", str(WORLD), sys.executable, WORKER])


def test_example_under_mp_spawn():
    """examples/ddp/train_ddp.py, started the mp.spawn way, a few epochs: it learns."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    script = os.path.join(root, "examples", "ddp", "train_ddp.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("RANK", None)
    done = subprocess.run([sys.executable, script, "--nprocs", "2", "--epochs", "4"], env=env,
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    line = [s for s in done.stdout.splitlines() if "test accuracy" in s]
    assert line, output
    accuracy = float(line[0].split("test accuracy")[1].split(",")[0])
    assert accuracy > 0.85, line[0]

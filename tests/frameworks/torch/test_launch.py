"""torchrun-style launching: the ranks read RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT and
meet through torch's store on MASTER_PORT (Braid's own rendezvous must not take that port).
Launchers: torch's (python3 -m torch.distributed.run), Braid's braidrun, mpirun and Slurm's
variables (import braid.torch maps them: braid.torch.launcher_environment)."""

import os
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "launch_worker.py")
WORLD = 3


TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                      "MASTER_PORT")


def _run(cmd, clear_torchrun=False):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if clear_torchrun:
        for name in TORCHRUN_VARIABLES:
            env.pop(name, None)
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


def test_mpirun():
    """mpirun sets OMPI_COMM_WORLD_*: import braid.torch turns them into torch's env://."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.fail("mpirun is not installed (tools/setup installs Open MPI)")
    env_args = ["-x", "PYTHONPATH", "-x", "MASTER_ADDR=127.0.0.1", "-x",
                f"MASTER_PORT={free_port()}", "-x", "OMP_NUM_THREADS=1"]
    _run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(WORLD), *env_args,
          sys.executable, WORKER], clear_torchrun=True)


def test_slurm_variables():
    """srun's variables (here set by hand: no Slurm on this machine): rank, size and local rank
    from SLURM_*, MASTER_ADDR the node list's first host, MASTER_PORT from the job id."""
    port = free_port()
    while port < 20000:
        port = free_port()
    procs = []
    for r in range(WORLD):
        env = dict(os.environ, OMP_NUM_THREADS="1", SLURM_PROCID=str(r), SLURM_NTASKS=str(WORLD),
                   SLURM_LOCALID=str(r), SLURM_NTASKS_PER_NODE=f"{WORLD}(x1)",
                   SLURM_JOB_NODELIST="localhost", SLURM_JOB_ID=str(port - 20000))
        for name in TORCHRUN_VARIABLES:
            env.pop(name, None)
        procs.append(subprocess.Popen([sys.executable, WORKER], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for r, (p, output) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0 and f"rank {r} ok" in output, output


def test_launcher_environment_parsing():
    import braid.torch

    env = {"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
           "SLURM_NTASKS_PER_NODE": "2(x4)", "SLURM_JOB_NODELIST": "n[07-10],gpu2",
           "SLURM_JOB_ID": "123456"}
    braid.torch.launcher_environment(env)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == \
        ("3", "8", "1", "2")
    assert env["MASTER_ADDR"] == "n07" and env["MASTER_PORT"] == str(20000 + 123456 % 20000)
    # What a launcher set stays; nothing is made up without a launcher's variables.
    env = {"RANK": "0", "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6"}
    assert braid.torch.launcher_environment(env) == [] and env["RANK"] == "0"
    assert braid.torch.launcher_environment({}) == []
    env = {"PMI_RANK": "1", "PMI_SIZE": "2", "MASTER_PORT": "1234"}
    assert braid.torch.launcher_environment(env) == ["RANK", "WORLD_SIZE"]
    assert braid.torch._first_host("a,b") == "a" and braid.torch._first_host("x[3,5-6]") == "x3"


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

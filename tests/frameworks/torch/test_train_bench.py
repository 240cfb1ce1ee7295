"""tools/train-bench's benchmark (bench/train/train_bench.py) runs end to end and reports what
it promises: a tiny MLP, 2 ranks, 2 timed steps per shape, pinned ranks, Braid, gloo and
gloo-view (each DDP run starts its ranks, and importing torch costs each a second or two, so the
MPI variant, which needs mpirun and mpi4py, is left to the tool's own runs) and both GradSync
programs; the table's sections and the JSON and CSV fields are checked, not the timings."""

import csv
import json
import os
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BENCH = os.path.join(ROOT, "bench", "train")
sys.path.insert(0, BENCH)


def build_dir():
    braidrun = os.environ.get("BRAIDRUN")
    if not braidrun or not os.path.exists(braidrun):
        pytest.skip("BRAIDRUN (the path of build/bin/braidrun) is not set")
    return os.path.dirname(os.path.dirname(braidrun))


def test_smoke_run_reports_every_field(tmp_path):
    out_json, out_csv = tmp_path / "train.json", tmp_path / "train.csv"
    cmd = [sys.executable, os.path.join(BENCH, "train_bench.py"), "--build-dir", build_dir(),
           "--np", "2", "--backends", "braid,gloo,gloo-view", "--load", "idle", "--pinning", "pinned",
           "--widths", "64,128,10",
           "--comm-batch", "1", "--compute-batch", "8", "--repeat", "1", "--steps", "2",
           "--warmup", "1", "--digits-epochs", "1",
           "--gradsync-args", "--widths 64,64 --batch 2 --steps 1 --rounds 1 --warmup 1",
           "--json", str(out_json), "--csv", str(out_csv)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for section in ("== DDP step, comm-bound", "== DDP step, compute-bound", "gloo/braid",
                    "gloo-view/braid",
                    "== GradSync: train_digits", "== GradSync: gradsync_bench", "== Targets"):
        assert section in done.stdout, output

    report = json.loads(out_json.read_text())
    assert report["skipped"] == {}, report["skipped"]
    backends = ["braid", "gloo", "gloo-view"]
    runs = report["runs"]
    assert all(r["command"] and r["returncode"] == 0 and r["result"] for r in runs), runs
    ddp = [r["result"] for r in runs if r["program"] == "ddp"]
    assert sorted(r["backend"] for r in ddp) == sorted(backends)
    for result in ddp:
        assert result["replica_max_difference"] == 0, result  # the gradients were averaged
        assert len(result["affinity_rank0"]) == 1, result  # pinned
        assert [s["batch"] for s in result["shapes"]] == [1, 8]
        for shape in result["shapes"]:
            assert len(shape["step_ms"]) == 2 and shape["step_median_ms"] > 0
            assert shape["comm_share"] is not None
    # Both backends trained the same model on the same data: equal up to rounding order.
    sums = [r["parameter_sum"] for r in ddp]
    assert max(sums) - min(sums) <= 1e-6 * max(abs(x) for x in sums), sums
    summary = report["summary"]
    assert len(summary["ddp"]) == 2 * len(backends)
    assert {(t["shape"], t["target"]) for t in summary["targets"]} == {("comm", 1.3),
                                                                       ("compute", 1.0)}
    assert {x["peer"] for x in summary["ratios"]} == {"gloo", "gloo-view"}
    assert summary["train_digits"][0]["step_ms"] > 0
    assert set(summary["gradsync_bench"][0]["modes"]) == {"nosync", "after_backward",
                                                          "gradsync", "gradsync_small"}
    with open(out_csv) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(backends) + 1 + 4
    assert all(row["step_ms"] for row in rows)


def test_co_runner_spins_one_process_per_cpu():
    import corunner

    cpus = sorted(os.sched_getaffinity(0))
    for own_session in (True, False):
        spinners = corunner.CoRunner(cpus, own_session=own_session)
        try:
            assert [os.sched_getaffinity(p.pid) for p in spinners.procs] == [{c} for c in cpus]
            assert all(p.poll() is None for p in spinners.procs)
            # busy: sessions of their own (autogroups of their own); busy-job: the caller's.
            sessions = {os.getsid(p.pid) for p in spinners.procs}
            assert (os.getsid(0) not in sessions) == own_session, (own_session, sessions)
            spinners.mark()
            time.sleep(0.3)
            assert spinners.cores() > 0.2, spinners.cores()  # at least one spinner ran
        finally:
            spinners.stop()
        assert spinners.procs == []


def test_busy_job_wrapper_spins_in_the_runs_session_and_reports_its_share():
    """corunner.py starts the spinners in its own session (where train_bench's run_command
    puts the launcher), runs the command, prints the share and leaves no spinner behind."""
    child = ("import os, time; time.sleep(0.5); "
             "print(sorted(p for p in os.listdir('/proc') if p.isdigit() and "
             "os.getsid(int(p)) == os.getsid(0) and "
             "open(f'/proc/{p}/cmdline').read().endswith(chr(0) + 'while True: pass' + chr(0))))")
    cpu = sorted(os.sched_getaffinity(0))[0]
    done = subprocess.run([sys.executable, os.path.join(BENCH, "corunner.py"), "--cpus",
                           str(cpu), "--", sys.executable, "-c", child],
                          capture_output=True, text=True, timeout=60, start_new_session=True)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout.replace("'", '"'))) == 1, done.stdout  # in the session
    import corunner

    cores = corunner.parse_cores(done.stderr)
    assert cores is not None and 0.2 < cores <= 1.2, done.stderr

"""compare.py's load conditions, pinning and oneCCL peer: the parsing of --load/--pinning, the
launcher command lines (mpirun, braidrun, oneCCL's), the tagging of every result with its
condition, and the load tables' arithmetic. No benchmark runs: the launcher is replaced by one
that returns captured output. Run: python3 -m unittest test_compare_load (from this folder).
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare  # noqa: E402
import load  # noqa: E402
import load_report  # noqa: E402
import overview  # noqa: E402
import perf_output  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402


def stats(busbw_by_size, time_us=1.0):
    return {size: report.SizeStats(size=size, busbw=b, busbw_min=b, busbw_max=b, time_us=time_us,
                                   time_min=time_us, time_max=time_us, repeats=1, wrong=0,
                                   unchecked=0)
            for size, b in busbw_by_size.items()}


class OptionsTest(unittest.TestCase):
    def test_defaults_are_one_plain_condition(self):
        args = compare.parse_args([])
        self.assertEqual((args.load, args.pinning), (["idle"], ["unpinned"]))
        c = compare.Comparison(args)
        self.assertEqual(c.conditions, [("idle", "unpinned")])

    def test_lists_and_condition_order(self):
        args = compare.parse_args(["--load", "idle,busy1", "--pinning", "unpinned,pinned",
                                   "--peers", "mpi,oneccl"])
        self.assertEqual(args.peers, ["mpi", "oneccl"])
        self.assertEqual(compare.Comparison(args).conditions,
                         [("idle", "unpinned"), ("busy1", "unpinned"),
                          ("idle", "pinned"), ("busy1", "pinned")])

    def test_unknown_values_are_refused(self):
        for argv in (["--load", "idle,heavy"], ["--pinning", "bound"], ["--load", ","]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
                compare.parse_args(argv)

    def test_oneccl_bench_path(self):
        self.assertEqual(compare.parse_args(["--oneccl-bench", "/x/bench"]).oneccl_bench,
                         "/x/bench")
        with mock.patch.dict(os.environ, {"ONECCL_ALLREDUCE_BENCH": "/env/bench"}):
            self.assertEqual(compare.parse_args([]).oneccl_bench, "/env/bench")

    def test_co_runners(self):
        self.assertEqual([load.co_runner_count(name, 2) for name in load.LOADS], [0, 2, 1])
        self.assertEqual(load.co_runner_count("busy", 16), 16)
        with self.assertRaises(ValueError):
            load.co_runner_count("heavy", 2)


class LauncherTest(unittest.TestCase):
    def test_mpirun_unpinned_is_bind_to_none(self):
        self.assertEqual(runners.mpirun_argv("mpirun", 2, "unpinned", 2),
                         ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", "2"])

    def test_mpirun_pinned(self):
        self.assertEqual(runners.mpirun_argv("mpirun", 2, "pinned", 2),
                         ["mpirun", "--allow-run-as-root", "--map-by", "core", "--bind-to",
                          "core", "-np", "2"])

    def test_mpirun_oversubscribes_only_beyond_the_cpus(self):
        self.assertEqual(runners.mpirun_argv("mpirun", 4, "unpinned", 2),
                         ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                          "-np", "4"])
        self.assertEqual(runners.mpirun_argv("mpirun", 4, "pinned", 2),
                         ["mpirun", "--allow-run-as-root", "--oversubscribe", "--map-by", "core",
                          "--bind-to", "core:overload-allowed", "-np", "4"])
        self.assertNotIn("--oversubscribe", runners.mpirun_argv("mpirun", 4, "pinned", 4))

    def test_braidrun(self):
        self.assertEqual(runners.braidrun_argv("braidrun", 2, "unpinned", [0, 1]),
                         ["braidrun", "-n", "2"])
        self.assertEqual(runners.braidrun_argv("braidrun", 2, "pinned", [0, 1]),
                         ["braidrun", "-n", "2", "--bind-to", "core"])
        wrapped = runners.braidrun_argv("braidrun", 4, "pinned", [0, 1])
        self.assertEqual(wrapped[:6], ["braidrun", "-n", "4", "--", "sh", "-c"])
        self.assertEqual(wrapped[-1], "sh")

    @unittest.skipUnless(shutil.which("taskset"), "needs taskset")
    def test_braidrun_wrapper_pins_rank_modulo_cpus(self):
        cpus = load.allowed_cpus()
        script = runners.braidrun_argv("braidrun", len(cpus) + 1, "pinned", cpus)[6]
        # Rank len(cpus) wraps around to the first CPU, the last rank before it has the last.
        for rank, cpu in ((len(cpus), cpus[0]), (len(cpus) - 1, cpus[-1])):
            out = subprocess.run(["sh", "-c", script, "sh", "sh", "-c", "taskset -pc $$"],
                                 env=dict(os.environ, LOCAL_RANK=str(rank)),
                                 capture_output=True, text=True, check=True).stdout
            self.assertTrue(out.strip().endswith(f": {cpu}"), out)

    def test_oneccl_arguments(self):
        band = runners.Band(8, 1024, 1000, 200)
        perf = band.args() + ["-a", "3", "-c", "1", "-d", "float", "-o", "sum"]
        self.assertEqual(runners.oneccl_args(perf),
                         ["-b", "8", "-e", "1024", "-f", "2", "-n", "1000", "-N", "1000",
                          "-w", "200", "-c", "1"])

    def test_oneccl_environment(self):
        shm = runners.oneccl_env({}, "shm", 2, 2)
        self.assertEqual((shm["FI_PROVIDER"], shm["CCL_ATL_SHM"], shm["CCL_WORKER_OFFLOAD"]),
                         ("shm", "1", "0"))
        self.assertEqual(shm["CCL_KVS_IFACE"], "lo")
        tcp = runners.oneccl_env({}, "tcp", 4, 2)
        self.assertEqual((tcp["FI_PROVIDER"], tcp["CCL_ATL_SHM"], tcp["CCL_YIELD"]),
                         ("tcp", "0", "sched_yield"))
        self.assertNotIn("CCL_WORKER_OFFLOAD", tcp)
        mine = runners.oneccl_env({"CCL_YIELD": "pause", "CCL_KVS_IFACE": "eth0"}, "shm", 2, 2)
        self.assertEqual((mine["CCL_YIELD"], mine["CCL_KVS_IFACE"]), ("pause", "eth0"))
        self.assertNotIn("CCL_WORKER_OFFLOAD", mine)

    def test_oneccl_run_line(self):
        programs = runners.Programs.in_build("/b", "/peers/oneccl_allreduce_bench")
        programs.mpirun = "/usr/bin/mpirun"
        with mock.patch.object(runners, "run_command") as run:
            runners.run_library("oneccl", "shm", 2, ["-b", "8", "-e", "8", "-n", "5"],
                                programs, 60, pinning="pinned", cpus=[0, 1])
        argv = run.call_args[0][0]
        self.assertEqual(argv[0], "env")
        self.assertIn("FI_PROVIDER=shm", argv)
        start = argv.index("/usr/bin/mpirun")
        self.assertEqual(argv[start:], ["/usr/bin/mpirun", "--allow-run-as-root", "--map-by",
                                        "core", "--bind-to", "core", "-np", "2", "--mca", "btl",
                                        "self,vader", "/peers/oneccl_allreduce_bench", "-b", "8",
                                        "-e", "8", "-n", "5", "-N", "5"])


class FakeCoRunners:
    started = []

    def __init__(self, count):
        FakeCoRunners.started.append(count)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class TaggingTest(unittest.TestCase):
    def test_results_carry_their_condition(self):
        with open(os.path.join(HERE, "samples", "mpi_allreduce_perf_np2.txt")) as f:
            text = f.read()
        args = compare.parse_args(["--np", "2", "--transport", "shm", "--sizes", "8",
                                   "--repeat", "1", "--peers", "mpi", "--load", "idle,busy1",
                                   "--pinning", "unpinned,pinned", "--no-probe"])
        c = compare.Comparison(args)
        c.cpus = [0, 1]
        calls = []

        def fake_run(lib, transport, nranks, perf_args, programs, timeout, **kw):
            calls.append((lib, kw["pinning"]))
            return runners.RunResult(f"{lib} {kw['pinning']}", 0, text, "", 0.1)

        FakeCoRunners.started = []
        with mock.patch.object(runners, "run_library", fake_run), \
                mock.patch.object(load, "CoRunners", FakeCoRunners):
            for condition in c.conditions:
                for lib in c.libraries:
                    c.run_case(0, "allreduce", "shm", 2, lib, condition)
        self.assertEqual(FakeCoRunners.started, [0, 0, 1, 1, 0, 0, 1, 1])
        self.assertEqual(calls[-1], ("mpi", "pinned"))
        self.assertIn(("allreduce", "shm", 2, "mpi", "busy1", "pinned"), c.samples)
        self.assertEqual([(r["library"], r["load"], r["pinning"], r["co_runners"])
                          for r in c.runs[:4]],
                         [("braid", "idle", "unpinned", 0), ("mpi", "idle", "unpinned", 0),
                          ("braid", "busy1", "unpinned", 1), ("mpi", "busy1", "unpinned", 1)])
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            summary = overview.print_report(c)
        self.assertEqual(list(summary), ["shm 2", "shm 2 busy1 unpinned", "shm 2 idle pinned",
                                         "shm 2 busy1 pinned"])
        entry = summary["shm 2 busy1 pinned"]
        self.assertEqual((entry["load"], entry["pinning"], entry["collective"]),
                         ("busy1", "pinned", "allreduce"))
        # The same output under load and idle (the sample's 8 sizes): every fraction is 1.
        self.assertEqual(entry["fraction_of_idle"]["mpi"],
                         [{"size": 8 * 8 ** k, "fraction": 1.0} for k in range(8)])
        self.assertNotIn("fraction_of_idle", summary["shm 2"])
        text = printed.getvalue()
        self.assertIn("== allreduce, shm, 2 ranks, busy1, pinned: busbw GB/s", text)
        self.assertIn("fraction of idle", text)
        self.assertIn("0.840 / 0.840 / 0.840", text)  # MPI's 8 B time in the sample

    def test_plain_run_keeps_the_plain_report(self):
        args = compare.parse_args(["--np", "2", "--transport", "shm", "--sizes", "8",
                                   "--repeat", "1", "--peers", "mpi", "--no-probe"])
        c = compare.Comparison(args)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            summary = overview.print_report(c)
        self.assertEqual(list(summary), ["shm 2"])
        self.assertIn("== allreduce, shm, 2 ranks: busbw GB/s", printed.getvalue())
        self.assertNotIn("fraction of idle", printed.getvalue())
        self.assertNotIn("condition", printed.getvalue())


class LoadReportTest(unittest.TestCase):
    def test_fraction_of_idle(self):
        idle = {"braid": stats({8: 2.0, 64: 4.0, 512: 0.0}), "mpi": stats({8: 1.0})}
        busy = {"braid": stats({8: 0.5, 64: 4.0, 512: 1.0, 4096: 3.0}), "mpi": stats({8: 0.25})}
        self.assertEqual(load_report.fraction_of_idle(busy, idle),
                         {"braid": {8: 0.25, 64: 1.0}, "mpi": {8: 0.25}})

    def test_fractions_need_idle_of_the_same_pinning(self):
        per_condition = {("idle", "unpinned"): {"braid": stats({8: 2.0})},
                         ("busy", "unpinned"): {"braid": stats({8: 1.5})},
                         ("busy", "pinned"): {"braid": stats({8: 1.0})}}
        self.assertEqual(load_report.fractions_by_load(per_condition, "unpinned",
                                                       ["idle", "busy"]),
                         {"busy": {"braid": {8: 0.75}}})
        self.assertEqual(load_report.fractions_by_load(per_condition, "pinned", ["idle", "busy"]),
                         {})

    def test_fraction_table(self):
        text = load_report.format_fraction_table(
            "T", ["braid", "mpi"], {"busy1": {"braid": {8: 0.25, 1024: 0.5}, "mpi": {8: 1.0}}})
        lines = text.splitlines()
        self.assertEqual(lines[1].split(), ["size", "Braid", "busy1", "MPI", "busy1"])
        self.assertEqual(lines[3].split(), ["8", "0.25", "1.00"])
        self.assertEqual(lines[4].split(), ["1K", "0.50", "-"])

    def test_latency_per_invocation(self):
        # Three repeats of one invocation each at 8 B: 10, 30 and 20 us per call.
        repeats = []
        for t in (10.0, 30.0, 20.0):
            mode = perf_row(8, t)
            repeats.append({8: mode})
        s = report.summarize(repeats, "out-of-place")[8]
        self.assertEqual((s.time_min, s.time_us, s.time_max), (10.0, 20.0, 30.0))
        self.assertEqual(load_report.latency_cell(s), "10.0 / 20.0 / 30.0")
        table = load_report.format_latency_table(
            "T", ["braid"], [("idle", "pinned"), ("busy", "pinned")],
            {("idle", "pinned"): {"braid": {8: s}}}, 8)
        self.assertEqual(table.splitlines()[3].split(), ["idle,", "pinned", "10.0", "/", "20.0",
                                                         "/", "30.0"])
        self.assertEqual(table.splitlines()[4].split(), ["busy,", "pinned", "-"])

    def test_ratio_summary_condition_column(self):
        case = ("allreduce", "shm", 2, {"braid": stats({8: 2.0}), "mpi": stats({8: 1.0})})
        text = report.format_ratio_summary([case, case], ["idle, unpinned", "busy1, pinned"])
        lines = text.splitlines()
        self.assertEqual(lines[1].split(), ["collective", "transport", "ranks", "condition", "8"])
        self.assertEqual(lines[4].split(), ["allreduce", "shm", "2", "busy1,", "pinned", "2.00"])

    def test_summary_keys(self):
        self.assertEqual(overview.summary_key("allreduce", "shm", 2, ("idle", "unpinned")),
                         "shm 2")
        self.assertEqual(overview.summary_key("reduce", "tcp", 4, ("busy", "pinned")),
                         "reduce tcp 4 busy pinned")


def perf_row(size, time_us):
    mode = perf_output.ModeResult(time_us=time_us, busbw=size / (time_us * 1e3),
                                  algbw=size / (time_us * 1e3), printed_busbw=0.0,
                                  printed_algbw=0.0, wrong=0)
    return perf_output.Row(size=size, count=size // 4, dtype="float", redop="sum",
                           modes={"out-of-place": mode})


if __name__ == "__main__":
    unittest.main()

"""compare.py's reading of nccl-tests style output, on captured and hand-made samples.

samples/ holds real output of Braid's all_reduce_perf (4 ranks, TCP) and of the peers
(mpi_allreduce_perf with 2 ranks, gloo_allreduce_perf with 4 ranks), the classic nccl-tests
layout (fixed two-decimal bandwidths, a wrong count) and a launcher-tagged output with N/A
columns. If a program's layout drifts, or the parser does, the
numbers below stop matching. Run: python3 -m unittest test_compare_parser (from this folder).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare  # noqa: E402
import perf_output  # noqa: E402
import report  # noqa: E402
import runners  # noqa: E402


def sample(name):
    with open(os.path.join(HERE, "samples", name)) as f:
        return f.read()


class ParserTest(unittest.TestCase):
    def assert_consistent(self, parsed, nranks):
        """Every derived busbw agrees with the printed two-decimal column, and busbw/algbw is
        2(n-1)/n: the program and the parser use the same definition."""
        for row in parsed.rows:
            for mode in row.modes.values():
                self.assertAlmostEqual(mode.busbw, mode.printed_busbw,
                                       delta=0.006 + 0.01 * mode.printed_busbw)
                self.assertAlmostEqual(mode.busbw / mode.algbw, 2.0 * (nranks - 1) / nranks)

    def test_braid_output(self):
        # braidrun -n 4 all_reduce_perf with NCCL_SHM_DISABLE=1 (TCP)
        parsed = perf_output.parse(sample("braid_all_reduce_perf_tcp_np4.txt"))
        self.assertEqual(parsed.nranks, 4)
        self.assertEqual([r.size for r in parsed.rows], [8 * 8 ** k for k in range(8)])
        row = parsed.row(2097152)
        oop, ip = row.modes["out-of-place"], row.modes["in-place"]
        self.assertEqual((oop.time_us, ip.time_us), (2854.34, 3163.50))
        self.assertAlmostEqual(oop.busbw, 2097152 / 2854.34e3 * 1.5, places=9)
        self.assertEqual(parsed.row(8).modes["out-of-place"].time_us, 203.10)
        self.assertEqual((parsed.total_wrong, parsed.out_of_bounds), (0, 0))
        self.assert_consistent(parsed, 4)

    def test_mpi_peer_output(self):
        parsed = perf_output.parse(sample("mpi_allreduce_perf_np2.txt"))
        self.assertEqual(parsed.nranks, 2)  # from the "#  Rank" lines
        self.assertEqual([r.size for r in parsed.rows], [8 * 8 ** k for k in range(8)])
        row = parsed.row(16777216)
        self.assertEqual((row.count, row.dtype, row.redop), (4194304, "float", "sum"))
        oop, ip = row.modes["out-of-place"], row.modes["in-place"]
        self.assertEqual((oop.time_us, ip.time_us), (3517.46, 2241.92))
        self.assertAlmostEqual(oop.busbw, 16777216 / 3517.46e3, places=9)
        self.assertEqual(oop.printed_busbw, 4.77)
        self.assertEqual(parsed.row(8).modes["in-place"].time_us, 0.42)
        self.assertEqual(parsed.total_wrong, 0)
        self.assertEqual((parsed.out_of_bounds, parsed.avg_busbw), (0, 2.87888))
        self.assert_consistent(parsed, 2)

    def test_gloo_peer_output(self):
        parsed = perf_output.parse(sample("gloo_allreduce_perf_np4.txt"))
        self.assertEqual(parsed.nranks, 4)
        self.assertEqual(len(parsed.rows), 8)
        oop = parsed.row(16777216).modes["out-of-place"]
        self.assertEqual(oop.time_us, 25852.0)  # one decimal once the time has 5 digits
        self.assertAlmostEqual(oop.busbw, 16777216 / 25852.0e3 * 1.5, places=9)
        self.assertAlmostEqual(parsed.avg_busbw, 0.237653)
        self.assert_consistent(parsed, 4)

    def test_classic_layout_and_wrong_count(self):
        parsed = perf_output.parse(sample("nccl_tests_classic_np2.txt"))
        self.assertEqual(parsed.nranks, 2)
        self.assertEqual(len(parsed.rows), 6)
        self.assertEqual(parsed.row(1048576).modes["out-of-place"].wrong, 3)
        self.assertEqual(parsed.row(16777216).modes["in-place"].time_us, 11876.0)
        self.assertEqual(parsed.total_wrong, 3)
        self.assertEqual(parsed.out_of_bounds, 1)
        self.assert_consistent(parsed, 2)

    def test_tagged_lines_and_na_columns(self):
        parsed = perf_output.parse(sample("tagged_unchecked_np4.txt"))
        self.assertEqual(parsed.nranks, 4)
        self.assertEqual([r.size for r in parsed.rows], [1024, 32768, 1048576])
        for row in parsed.rows:
            self.assertNotIn("out-of-place", row.modes)  # N/A: the program has no such mode
            self.assertIsNone(row.modes["in-place"].wrong)  # N/A: not checked
        ip = parsed.row(32768).modes["in-place"]
        self.assertAlmostEqual(ip.busbw, 32768 / 210.25e3 * 1.5, places=9)
        self.assert_consistent(parsed, 4)

    def test_explicit_rank_count_wins(self):
        text = sample("mpi_allreduce_perf_np2.txt")
        oop = perf_output.parse(text, nranks=4).row(2097152).modes["out-of-place"]
        self.assertAlmostEqual(oop.busbw, 2097152 / 466.98e3 * 1.5, places=9)


class ComparisonTest(unittest.TestCase):
    def test_median_spread_and_ratio(self):
        braid = perf_output.parse(sample("nccl_tests_classic_np2.txt"))
        mpi = perf_output.parse(sample("mpi_allreduce_perf_np2.txt"))
        # Three repeats of Braid: the times of the sample scaled by 1, 2 and 0.4.
        repeats = []
        for scale in (1.0, 2.0, 0.4):
            text = sample("nccl_tests_classic_np2.txt")
            text = text.replace("  24.75  ", f"{24.75 * scale:7.2f}  ")
            repeats.append({r.size: r for r in perf_output.parse(text).rows})
        braid_stats = report.summarize(repeats, "out-of-place")
        s = braid_stats[65536]
        self.assertEqual(s.repeats, 3)
        self.assertAlmostEqual(s.busbw, 65536 / 24.75e3)  # the median is the unscaled run
        self.assertAlmostEqual(s.busbw_min, 65536 / 49.5e3)
        self.assertAlmostEqual(s.busbw_max, 65536 / 9.9e3)
        self.assertEqual(braid_stats[1048576].wrong, 9)  # 3 wrong elements in each repeat
        self.assertEqual(braid_stats[1048576].unchecked, 0)

        mpi_stats = report.summarize([{r.size: r for r in mpi.rows}], "out-of-place")
        table = report.format_table("shm", 2, ["braid", "mpi"],
                                    {"braid": braid_stats, "mpi": mpi_stats}, "T", bound=4.0)
        lines = table.splitlines()
        self.assertEqual(lines[1].split()[:4], ["size", "Braid", "busbw", "MPI"])
        row_8 = next(line.split() for line in lines if line.split()[:1] == ["8"])
        ratio = braid.row(8).modes["out-of-place"].busbw / mpi.row(8).modes["out-of-place"].busbw
        self.assertEqual(row_8[-3], f"{ratio:.2f}")  # Braid/MPI, then the two %bound columns
        self.assertEqual(row_8[-1], f"{100 * mpi.row(8).modes['out-of-place'].busbw / 4.0:.0f}%")
        self.assertIn("latency at 8 B", table)
        self.assertIn("Braid 5.12 us [5.12-5.12]", table)
        self.assertIn("WRONG RESULTS (marked !): Braid at 1M (9)", table)
        self.assertNotIn("never checked", table)

    def test_never_checked_is_reported(self):
        rows = {r.size: r for r in perf_output.parse(sample("tagged_unchecked_np4.txt")).rows}
        stats = report.summarize([rows, rows], "in-place")
        self.assertEqual(stats[1024].unchecked, 2)
        table = report.format_table("tcp", 4, ["gloo"], {"gloo": stats}, "T", None)
        self.assertIn("results never checked for some sizes: Gloo", table)

    def test_memory_bound(self):
        self.assertAlmostEqual(report.memory_bound(40.0, 2), 10.0)
        self.assertAlmostEqual(report.memory_bound(40.0, 4), 7.5)
        self.assertIsNone(report.memory_bound(None, 2))


class CollectiveTest(unittest.TestCase):
    def test_bus_factors(self):
        self.assertEqual(perf_output.bus_factor(4), 1.5)
        self.assertEqual(perf_output.bus_factor(4, "alltoall"), 0.75)
        self.assertEqual(perf_output.bus_factor(4, "gather"), 0.75)
        self.assertEqual(perf_output.bus_factor(4, "broadcast"), 1.0)
        self.assertEqual(perf_output.bus_factor(4, "sendrecv"), 1.0)

    def test_alltoall_output(self):
        # braidrun -n 4 alltoall_perf: in-place columns are N/A (ncclAlltoAll has no in-place
        # form), busbw = size / time * (n-1)/n.
        parsed = perf_output.parse(sample("braid_alltoall_perf_np4.txt"), 4, "alltoall")
        self.assertEqual([r.size for r in parsed.rows], [64, 2048, 65536])
        for row in parsed.rows:
            self.assertEqual(list(row.modes), ["out-of-place"])
            oop = row.modes["out-of-place"]
            self.assertAlmostEqual(oop.busbw / oop.algbw, 0.75)
            self.assertAlmostEqual(oop.busbw, oop.printed_busbw,
                                   delta=0.006 + 0.01 * oop.printed_busbw)
        self.assertEqual(parsed.total_wrong, 0)

    def test_per_rank_sizes_are_raised(self):
        args = compare.parse_args(["--collective", "allreduce,alltoall", "--quick", "--np", "4"])
        c = compare.Comparison(args)
        self.assertEqual([b.first for b in c.bands_for("allreduce", 4)][0], 8)
        self.assertEqual([b.first for b in c.bands_for("alltoall", 4)],
                         [64, 64 << 10, 1 << 20, 64 << 20])
        self.assertEqual([case[0] for case in c.cases()], ["allreduce"] * 2 + ["alltoall"] * 2)


class PlanTest(unittest.TestCase):
    def test_bands_split_the_sweep(self):
        bands = runners.plan_bands(8, 64 << 20)
        self.assertEqual([(b.first, b.last) for b in bands],
                         [(8, 1 << 10), (2 << 10, 64 << 10), (128 << 10, 4 << 20),
                          (8 << 20, 64 << 20)])
        self.assertEqual(sum(len(compare.band_sizes(b)) for b in bands), 24)
        self.assertEqual(bands[0].args()[:6], ["-b", "8", "-e", "1024", "-f", "2"])
        self.assertEqual((bands[0].iters, bands[0].warmup), (1000, 200))
        self.assertEqual((bands[1].iters, bands[1].warmup), (100, 50))

    def test_explicit_sizes_and_iters(self):
        bands = runners.plan_bands(8, 64 << 20, sizes=[1 << 20, 8], iters=7)
        self.assertEqual([(b.first, b.last, b.iters) for b in bands],
                         [(8, 8, 7), (1 << 20, 1 << 20, 7)])

    def test_size_parsing(self):
        self.assertEqual([compare.parse_size(s) for s in ("8", "64K", "1M", "64MB", "2G")],
                         [8, 65536, 1 << 20, 64 << 20, 2 << 30])


if __name__ == "__main__":
    unittest.main()

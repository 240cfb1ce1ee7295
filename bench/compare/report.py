"""Turns the repeated runs into the comparison: medians, spreads, ratios, tables, JSON, plots.

Per (transport, ranks, library, size) the repeats give one busbw each; the table shows their
median and the min-max spread, and ratios of medians between Braid and each peer. For shared
memory, busbw is also related to the memory bound: every rank has to read its input and write
its output at least once, 2*n*S bytes at memory bandwidth B, so busbw <= B*(n-1)/n^2.
"""

import dataclasses
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from perf_output import Row
from runners import LIBRARY_TITLES

# (collective, transport, nranks, library, load, pinning); see load.py for the last two.
Key = Tuple[str, str, int, str, str, str]


@dataclasses.dataclass
class SizeStats:
    size: int
    busbw: float  # median over repeats, GB/s
    busbw_min: float
    busbw_max: float
    time_us: float  # median over repeats
    time_min: float
    time_max: float
    repeats: int
    wrong: int  # wrong elements summed over repeats
    unchecked: int  # repeats in which the program did not check


def size_label(size: int) -> str:
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def fmt(value: Optional[float]) -> str:
    """Three significant digits, fixed notation where it stays short."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if 0.001 <= abs(value) < 1000:
        digits = max(0, 2 - int(f"{abs(value):e}".split("e")[1]))
        return f"{value:.{digits}f}"
    return f"{value:.2e}"


def summarize(repeats: Sequence[Dict[int, Row]], mode: str) -> Dict[int, SizeStats]:
    """Median and spread per size over the repeats that produced a result for it."""
    by_size: Dict[int, List] = {}
    for rows in repeats:
        for size, row in rows.items():
            result = row.modes.get(mode)
            if result is not None:
                by_size.setdefault(size, []).append(result)
    stats = {}
    for size, results in sorted(by_size.items()):
        busbw = [r.busbw for r in results]
        times = [r.time_us for r in results]
        stats[size] = SizeStats(
            size=size, busbw=statistics.median(busbw), busbw_min=min(busbw),
            busbw_max=max(busbw), time_us=statistics.median(times), time_min=min(times),
            time_max=max(times), repeats=len(results),
            wrong=sum(r.wrong or 0 for r in results),
            unchecked=sum(1 for r in results if r.wrong is None))
    return stats


def memory_bound(copy_gbps: Optional[float], nranks: int) -> Optional[float]:
    """Upper bound of a shared-memory allreduce's busbw from the machine's memory bandwidth."""
    if not copy_gbps or nranks < 2:
        return None
    return copy_gbps * (nranks - 1) / nranks ** 2


def _cell(s: Optional[SizeStats]) -> str:
    if s is None:
        return "-"
    mark = " !" if s.wrong else ""
    if s.repeats == 1:
        return f"{fmt(s.busbw)}{mark}"
    return f"{fmt(s.busbw)} [{fmt(s.busbw_min)}-{fmt(s.busbw_max)}]{mark}"


def _ratio(a: Optional[SizeStats], b: Optional[SizeStats]) -> str:
    if a is None or b is None or b.busbw <= 0:
        return "-"
    return f"{a.busbw / b.busbw:.2f}"


def format_table(transport: str, nranks: int, libraries: List[str],
                 stats: Dict[str, Dict[int, SizeStats]], title: str,
                 bound: Optional[float]) -> str:
    """One (transport, ranks) table: busbw per library, Braid's ratio to each peer, and for
    shared memory each library's busbw as a percentage of the memory bound."""
    peers = [lib for lib in libraries if lib != "braid"]
    has_braid = "braid" in libraries
    # Braid with registered buffers is compared with the other peers too.
    reg_peers = [p for p in peers if p != "braid-reg"] if "braid-reg" in libraries else []
    header = ["size"] + [f"{LIBRARY_TITLES[lib]} busbw" for lib in libraries]
    if has_braid:
        header += [f"Braid/{LIBRARY_TITLES[p]}" for p in peers]
    header += [f"Braid -R/{LIBRARY_TITLES[p]}" for p in reg_peers]
    if bound:
        header += [f"{LIBRARY_TITLES[lib]} %bound" for lib in libraries]
    sizes = sorted({size for lib in libraries for size in stats.get(lib, {})})
    rows = []
    for size in sizes:
        cells = {lib: stats.get(lib, {}).get(size) for lib in libraries}
        row = [size_label(size)] + [_cell(cells[lib]) for lib in libraries]
        if has_braid:
            row += [_ratio(cells["braid"], cells[p]) for p in peers]
        row += [_ratio(cells["braid-reg"], cells[p]) for p in reg_peers]
        if bound:
            row += ["-" if cells[lib] is None else f"{100.0 * cells[lib].busbw / bound:.0f}%"
                    for lib in libraries]
        rows.append(row)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = [title]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]

    smallest = sizes[0] if sizes else None
    if smallest is not None:
        parts = []
        for lib in libraries:
            s = stats.get(lib, {}).get(smallest)
            if s is not None:
                parts.append(f"{LIBRARY_TITLES[lib]} {fmt(s.time_us)} us "
                             f"[{fmt(s.time_min)}-{fmt(s.time_max)}]")
        lines.append(f"latency at {size_label(smallest)} B (median [min-max] time per call): "
                     + ", ".join(parts))
    if bound:
        lines.append(f"memory bound B(n-1)/n^2 = {fmt(bound)} GB/s (B: median best copy GB/s of "
                     "the stream probes, all threads; it holds for messages beyond the caches, "
                     "cache-resident ones can pass 100%)")
    wrong = [f"{LIBRARY_TITLES[lib]} at {size_label(s.size)} ({s.wrong})"
             for lib in libraries for s in stats.get(lib, {}).values() if s.wrong]
    if wrong:
        lines.append("WRONG RESULTS (marked !): " + ", ".join(wrong))
    unchecked = sorted({LIBRARY_TITLES[lib] for lib in libraries
                        for s in stats.get(lib, {}).values() if s.unchecked == s.repeats})
    if unchecked:
        lines.append("results never checked for some sizes: " + ", ".join(unchecked))
    return "\n".join(lines)


def format_ratio_summary(cases, conditions: Optional[List[str]] = None) -> str:
    """One line per (collective, transport, ranks): Braid's busbw over MPI's (= MPI's time over
    Braid's) at each size, from the medians; > 1 means Braid is faster. With conditions (one
    label per case), a condition column tells the cases of one (collective, transport, ranks)
    apart."""
    # Columns are positions in each case's size list: the per-rank collectives raise the
    # smallest size to 16 B x n, so their first column is that size, not the header's.
    per_case = [sorted({size for lib in ("braid", "mpi") for size in stats.get(lib, {})})
                for _, _, _, stats in cases]
    columns = max(per_case, key=len) if per_case else []
    header = ["collective", "transport", "ranks"] + (["condition"] if conditions else []) \
        + [size_label(s) for s in columns]
    rows = []
    for i, ((coll, transport, nranks, stats), sizes) in enumerate(zip(cases, per_case)):
        cells = [_ratio(stats.get("braid", {}).get(s), stats.get("mpi", {}).get(s))
                 for s in sizes]
        rows.append([coll, transport, str(nranks)] + ([conditions[i]] if conditions else [])
                    + cells + ["-"] * (len(columns) - len(cells)))
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["== Braid/MPI (busbw ratio of the medians; > 1: Braid faster; per-rank collectives' "
             "first column: 16 B x ranks) =="]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def stats_to_json(stats: Dict[int, SizeStats]) -> List[dict]:
    return [dataclasses.asdict(s) for s in stats.values()]


def write_plot(path: str, title: str, stats: Dict[str, Dict[int, SizeStats]],
               bound: Optional[float]) -> Optional[str]:
    """busbw against size, log-log, one line per library with its min-max band. Returns why no
    plot was written, or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401  (used through matplotlib.ticker)
    except ImportError:
        return "matplotlib is not installed (apt-get install python3-matplotlib)"
    fig, ax = plt.subplots(figsize=(8, 5))
    for lib, per_size in stats.items():
        if not per_size:
            continue
        sizes = sorted(per_size)
        ax.plot(sizes, [per_size[s].busbw for s in sizes], marker="o", markersize=3,
                label=LIBRARY_TITLES.get(lib, lib))
        ax.fill_between(sizes, [per_size[s].busbw_min for s in sizes],
                        [per_size[s].busbw_max for s in sizes], alpha=0.2)
    if bound:
        ax.axhline(bound, linestyle="--", color="gray", label="memory bound B(n-1)/n^2")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=4))
    ax.xaxis.set_major_formatter(
        matplotlib.ticker.FuncFormatter(lambda x, _: size_label(int(round(x)))))
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s), median of repeats")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None

"""How each library holds up under the load conditions of one run (see load.py).

Two tables per (collective, transport, ranks) case, from the statistics of report.summarize:

* fraction of idle, per pinning: for each library and size, the median busbw under a load over
  the median busbw idle, both from this run and the same pinning (1.00: unaffected, 0.50: half
  the bandwidth). Only when `idle` is among the loads.
* time per call at the smallest size, per condition: min / median / max over the repeats of one
  invocation's average time per call (every size is timed by one invocation per repeat), so a
  bound such as "no invocation averages more than 20 us" can be read off the max.
"""

from typing import Dict, List, Optional, Tuple

from report import SizeStats, fmt, size_label
from runners import LIBRARY_TITLES

Stats = Dict[str, Dict[int, SizeStats]]  # library -> size -> statistics
Condition = Tuple[str, str]  # (load, pinning)


def fraction_of_idle(loaded: Stats, idle: Stats) -> Dict[str, Dict[int, float]]:
    """library -> size -> median busbw under load / median busbw idle, where both exist and the
    idle one is positive."""
    fractions: Dict[str, Dict[int, float]] = {}
    for lib, per_size in loaded.items():
        base = idle.get(lib, {})
        for size, s in per_size.items():
            if size in base and base[size].busbw > 0:
                fractions.setdefault(lib, {})[size] = s.busbw / base[size].busbw
    return fractions


def fractions_by_load(stats: Dict[Condition, Stats], pinning: str,
                      loads: List[str]) -> Dict[str, Dict[str, Dict[int, float]]]:
    """load -> library -> size -> fraction of idle, for the loads other than idle of one
    pinning; empty when idle was not measured."""
    idle = stats.get(("idle", pinning))
    if idle is None:
        return {}
    return {load: fraction_of_idle(stats.get((load, pinning), {}), idle)
            for load in loads if load != "idle"}


def _table(title: str, header: List[str], rows: List[List[str]]) -> List[str]:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = [title, "  ".join(h.rjust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    return lines + ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]


def format_fraction_table(title: str, libraries: List[str],
                          fractions: Dict[str, Dict[str, Dict[int, float]]]) -> str:
    """Rows: sizes; columns: library x load, each the fraction of idle with two decimals."""
    columns = [(lib, load) for load in fractions for lib in libraries]
    sizes = sorted({size for per_lib in fractions.values() for per_size in per_lib.values()
                    for size in per_size})
    header = ["size"] + [f"{LIBRARY_TITLES.get(lib, lib)} {load}" for lib, load in columns]
    rows = []
    for size in sizes:
        cells = [fractions[load].get(lib, {}).get(size) for lib, load in columns]
        rows.append([size_label(size)] + ["-" if c is None else f"{c:.2f}" for c in cells])
    return "\n".join(_table(title, header, rows))


def smallest_size(stats: Dict[Condition, Stats]) -> Optional[int]:
    sizes = [size for per_lib in stats.values() for per_size in per_lib.values()
             for size in per_size]
    return min(sizes) if sizes else None


def latency_cell(s: Optional[SizeStats]) -> str:
    """min / median / max of the per-invocation average time per call, in us."""
    if s is None:
        return "-"
    return f"{fmt(s.time_min)} / {fmt(s.time_us)} / {fmt(s.time_max)}"


def format_latency_table(title: str, libraries: List[str], conditions: List[Condition],
                         stats: Dict[Condition, Stats], size: int) -> str:
    """Rows: conditions; columns: libraries; cells: latency_cell at `size`."""
    header = ["condition"] + [LIBRARY_TITLES.get(lib, lib) for lib in libraries]
    rows = [[f"{load}, {pinning}"]
            + [latency_cell(stats.get((load, pinning), {}).get(lib, {}).get(size))
               for lib in libraries]
            for load, pinning in conditions]
    return "\n".join(_table(title, header, rows))


def fractions_to_json(fractions: Dict[str, Dict[int, float]]) -> Dict[str, List[dict]]:
    return {lib: [{"size": size, "fraction": value} for size, value in sorted(per_size.items())]
            for lib, per_size in fractions.items()}


def format_case(case: str, libraries: List[str], conditions: List[Condition],
                loads: List[str], pinnings: List[str], stats: Dict[Condition, Stats],
                repeats: int) -> Tuple[List[str], Dict[Condition, Dict[str, Dict[int, float]]]]:
    """The load tables of one case ("allreduce, shm, 2 ranks"), and the fractions per
    (load, pinning) for the JSON."""
    lines: List[str] = []
    by_condition: Dict[Condition, Dict[str, Dict[int, float]]] = {}
    for pinning in pinnings:
        fractions = fractions_by_load(stats, pinning, loads)
        if not fractions:
            continue
        for load, per_lib in fractions.items():
            by_condition[(load, pinning)] = per_lib
        lines.append(format_fraction_table(
            f"\n== {case}, {pinning}: fraction of idle (median busbw under load / median busbw "
            "idle, same run) ==", libraries, fractions))
    size = smallest_size(stats)
    if size is not None:
        lines.append(format_latency_table(
            f"\n== {case}: time per call at {size_label(size)} B (us), per invocation: "
            f"min / median / max over {repeats} repeat(s) ==", libraries, conditions, stats,
            size))
    return lines, by_condition

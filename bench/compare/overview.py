"""The printed report of one comparison (compare.py): the machine lines, one busbw table per
case and condition, the load tables (load_report.py), the ratio summary, NCCL and the failures;
and the per-case summary that --json writes."""

import datetime
import os
import platform
import statistics
from typing import Dict, List, Optional

import load
import load_report
import report
from runners import LIBRARY_TITLES


def fmt_percent(value: Optional[float]) -> str:
    return "unknown" if value is None else f"{value:.0f}%"


def median_copy(probes: List[dict]) -> Optional[float]:
    """Median over the probes of the best copy GB/s with the most threads."""
    values = []
    for probe in probes:
        copies = {int(k.split()[1]): v for k, v in probe["gbps"].items() if k.startswith("copy")}
        if copies:
            values.append(copies[max(copies)])
    return statistics.median(values) if values else None


def summary_key(coll: str, transport: str, nranks: int, condition) -> str:
    """The --json summary's key of one table: "shm 2" for allreduce, "reduce shm 2" for the
    others (tools/results-report reads these), then "busy1 pinned" beyond idle, unpinned."""
    key = f"{transport} {nranks}" if coll == "allreduce" else f"{coll} {transport} {nranks}"
    return key if tuple(condition) == load.DEFAULT_CONDITION else f"{key} {' '.join(condition)}"


def print_report(c) -> dict:
    """Prints the report of Comparison c; returns the summary for --json."""
    args = c.args
    out = []
    out.append(f"# Comparison of {', '.join(args.collective)}: {args.dtype} {args.op}, {args.mode}, "
               f"{args.repeat} repeat(s), median per size; [min-max] = spread of the repeats")
    out.append(f"# host {platform.node()}, {os.cpu_count()} CPUs, "
               f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
               f"invocations per library and case: "
               + ", ".join(f"{report.size_label(b.first)}..{report.size_label(b.last)} -n "
                           f"{b.iters} -w {b.warmup}" for b in c.bands))
    if c.conditions != [load.DEFAULT_CONDITION]:
        cpus = len(load.allowed_cpus())
        out.append("# conditions, interleaved in every repeat: load "
                   + ", ".join(f"{name} ({load.co_runner_count(name, cpus)} busy co-runner(s))"
                               for name in args.load)
                   + "; pinning " + ", ".join(args.pinning)
                   + " (pinned: rank i on CPU i mod " + str(cpus) + ")")
    if c.probes:
        out.append("# memory bandwidth before each repeat (stream_probe, best GB/s, "
                   "copy/add/triad per thread count):")
        for probe in c.probes:
            out.append(f"#   repeat {probe['repeat'] + 1}: {format_probe(probe['gbps'])}")
    if c.cpu_others:
        out.append("# CPU used by other processes during each repeat: "
                   + ", ".join(fmt_percent(v) for v in c.cpu_others))
    copy = median_copy(c.probes)
    summary = {}
    ratios, ratio_labels = [], []
    conditions = c.conditions
    several = conditions != [load.DEFAULT_CONDITION]
    for coll, transport, nranks, libs in c.cases():
        case_stats = {}
        keys = {}
        for condition in conditions:
            stats = {lib: report.summarize(c.samples.get((coll, transport, nranks, lib)
                                                         + condition, []), args.mode)
                     for lib in libs}
            case_stats[condition] = stats
            # The memory bound is the allreduce's (every rank reads and writes the whole
            # message).
            bound = (report.memory_bound(copy, nranks)
                     if transport == "shm" and coll == "allreduce" else None)
            where = f"{coll}, {transport}, {nranks} ranks"
            if several:
                where += f", {load.label(*condition)}"
            title = f"\n== {where}: busbw GB/s, median [min-max] =="
            if transport == "shm" and "gloo" in libs:
                title += "  (Gloo has no shared-memory transport: see the tcp tables)"
            out.append(report.format_table(transport, nranks, libs, stats, title, bound))
            if "braid" in libs and "mpi" in libs:
                ratios.append((coll, transport, nranks, stats))
                ratio_labels.append(load.label(*condition))
            key = keys[condition] = summary_key(coll, transport, nranks, condition)
            summary[key] = {
                "collective": coll, "transport": transport, "nranks": nranks,
                "load": condition[0], "pinning": condition[1],
                "memory_bound_gbps": bound,
                "libraries": {lib: report.stats_to_json(s) for lib, s in stats.items()}}
            if args.plot:
                os.makedirs(args.plot, exist_ok=True)
                stem = "" if coll == "allreduce" else f"{coll}_"
                tail = f"_{'_'.join(condition)}" if several else ""
                path = os.path.join(args.plot, f"busbw_{stem}{transport}_np{nranks}{tail}.png")
                why = report.write_plot(path, f"{coll} {args.dtype} {args.op} {args.mode}, "
                                        f"{transport}, {nranks} ranks"
                                        f"{', ' + load.label(*condition) if several else ''} "
                                        f"(median of {args.repeat})", stats, bound)
                out.append(f"plot: {why or path}")
        if several:
            lines, fractions = load_report.format_case(
                f"{coll}, {transport}, {nranks} ranks", libs, conditions, args.load,
                args.pinning, case_stats, args.repeat)
            out += lines
            for condition, per_lib in fractions.items():
                summary[keys[condition]]["fraction_of_idle"] = \
                    load_report.fractions_to_json(per_lib)
    if len(ratios) > 1:
        out.append("\n" + report.format_ratio_summary(ratios,
                                                       ratio_labels if several else None))
    for nranks in args.np:
        stats = report.summarize(c.samples.get(("allreduce", "gpu", nranks, "nccl")
                                               + load.DEFAULT_CONDITION, []), args.mode)
        if stats:
            out.append(report.format_table("gpu", nranks, ["nccl"], {"nccl": stats},
                                           f"\n== NCCL on GPUs, {nranks} ranks ==", None))
    if c.nccl_note:
        out.append(f"\n{c.nccl_note}")
    for note in getattr(c, "skipped", []):
        out.append(f"\n{note}")
    if c.failures:
        out.append("\nFAILURES (the other libraries ran regardless):")
        for f in c.failures:
            where = " ".join(str(x) for x in (LIBRARY_TITLES.get(f["library"], f["library"]),
                                              f["transport"],
                                              f"{f['nranks']} ranks" if f["nranks"] else None,
                                              f.get("condition"),
                                              f"repeat {f['repeat'] + 1}"
                                              if f["repeat"] is not None else None) if x)
            out.append(f"- {where}: {f['message']}")
    else:
        out.append("\nno failures")
    print("\n".join(out), flush=True)
    return summary


def format_probe(gbps: Dict[str, float]) -> str:
    """{"copy 1": 26.5, ...} as "1 thread 26.5/18.7/18.0, 2 threads ..."."""
    threads = sorted({int(k.split()[1]) for k in gbps})
    parts = []
    for t in threads:
        values = "/".join(f"{gbps[f'{k} {t}']:.1f}" if f"{k} {t}" in gbps else "-"
                          for k in ("copy", "add", "triad"))
        parts.append(f"{t} thread{'s' if t > 1 else ''} {values}")
    return ", ".join(parts) if parts else "no data"



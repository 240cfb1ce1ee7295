"""train-bench's parsing of each program's output, its summary (medians of per-run medians,
communication shares, backend ratios, the targets) and its table, JSON and CSV forms."""

import csv
import json
import re
import statistics
from typing import Dict, List, Optional, Tuple

# What the issue asks of DDP over Braid, as gloo/braid step-time ratios (above 1: Braid faster).
TARGETS = {"comm": 1.3, "compute": 1.0}
SHAPE_TITLES = {"comm": "comm-bound", "compute": "compute-bound"}
# The backends Braid's step is compared with. gloo is DDP as users run it (the targets' peer);
# gloo-view is the same with gradient_as_bucket_view=True, which braid.torch's DDP sets: the
# part of Braid's lead that a gloo user could have by that option alone.
PEERS = ("gloo", "gloo-view", "mpi")
GRADSYNC_MODES = {"no sync": "nosync", "one allreduce after backward": "after_backward",
                  "GradSync, default buckets": "gradsync", "GradSync, small buckets":
                  "gradsync_small"}


def median(values: List[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def shape_batch(args, shape: str) -> int:
    return args.comm_batch if shape == "comm" else args.compute_batch


def share(step: Optional[float], floor: Optional[float]) -> Optional[float]:
    """The part of a step that communication added beyond the same step without it."""
    return None if not step or floor is None else (step - floor) / step


# Parsing -----------------------------------------------------------------------------------

def parse_ddp(stdout: str) -> Tuple[Optional[dict], Optional[str]]:
    for line in stdout.splitlines():
        if line.startswith("train-bench-result: "):
            result = json.loads(line.split(": ", 1)[1])
            for shape in result["shapes"]:
                shape["comm_share"] = share(shape["step_median_ms"], shape["noop_median_ms"])
            return result, None
    return None, "no train-bench-result line"


DIGITS_EPOCH = re.compile(
    r"^epoch\s+(\d+) .* step ([\d.]+) ms \(median\)\s+finish wait ([\d.]+) ms")


def parse_digits(stdout: str) -> Tuple[Optional[dict], Optional[str]]:
    """train_digits prints each epoch's median step and median wait in finish(); the first
    epoch (start-up, first bucket rebuild) is left out when there are more."""
    epochs = [(float(m.group(2)), float(m.group(3)))
              for m in map(DIGITS_EPOCH.match, stdout.splitlines()) if m]
    if not epochs:
        return None, "no epoch lines"
    kept = epochs[1:] or epochs
    step, wait = median([e[0] for e in kept]), median([e[1] for e in kept])
    return {"epochs": [{"step_ms": s, "finish_wait_ms": w} for s, w in epochs],
            "step_ms": step, "finish_wait_ms": wait,
            "comm_share": wait / step if step else None}, None


def parse_gradsync(stdout: str) -> Tuple[Optional[dict], Optional[str]]:
    """gradsync_bench's markdown table: | ranks | mode | step ms | wait ms | ... | CPU ms |."""
    modes = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[1] in GRADSYNC_MODES:
            modes[GRADSYNC_MODES[cells[1]]] = {"step_ms": float(cells[2]),
                                               "wait_ms": float(cells[3]),
                                               "cpu_ms": float(cells[6])}
    if len(modes) != len(GRADSYNC_MODES):
        return None, "the table lacks modes"
    floor = modes["nosync"]["step_ms"]
    for mode in modes.values():
        mode["comm_share"] = share(mode["step_ms"], floor)
    return {"modes": modes}, None


# Summary -----------------------------------------------------------------------------------

def summarize(runs: List[dict], args) -> Dict[str, list]:
    ok = [r for r in runs if r["result"] is not None]
    summary = {"ddp": [], "ratios": [], "targets": [], "train_digits": [], "gradsync_bench": []}
    for load in args.load:
        for pinning in args.pinning:
            where = [r for r in ok if r["load"] == load and r["pinning"] == pinning]
            for nranks in args.np:
                here = [r for r in where if r["nranks"] == nranks]
                for shape in args.shapes:
                    summarize_ddp(summary, [r for r in here if r["program"] == "ddp"],
                                  dict(load=load, pinning=pinning, shape=shape, nranks=nranks),
                                  shape_batch(args, shape), args.backends)
                summarize_programs(summary, here, load, pinning, nranks)
    return summary


def summarize_ddp(summary, runs, case, batch, backends) -> None:
    """One row per backend for one case (load, pinning, shape, nranks), then the ratios."""
    by_backend = {}
    for backend in backends:
        mine = [r for r in runs if r["backend"] == backend]
        if not mine:
            continue
        first = mine[0]["result"]
        # Each run's numbers for this shape, with the run's own fields beside them.
        results = [dict(next(s for s in r["result"]["shapes"] if s["batch"] == batch),
                        replica_max_difference=r["result"]["replica_max_difference"])
                   for r in mine]
        row = dict(case, backend=backend, transport=first["transport"], widths=first["widths"],
                   batch=batch, params=first["params"],
                   gradient_mib=first["gradient_mib"], buckets=first["buckets"],
                   runs=len(results),
                   step_ms=median([x["step_median_ms"] for x in results]),
                   noop_step_ms=median([x["noop_median_ms"] for x in results]),
                   comm_share=median([x["comm_share"] for x in results]),
                   cpu_ms=median([x["cpu_ms"] for x in results]),
                   noop_cpu_ms=median([x["noop_cpu_ms"] for x in results]),
                   replica_max_difference=max(x["replica_max_difference"] for x in results),
                   corunner_cores=median([r["corunner_cores"] for r in mine
                                          if r.get("corunner_cores") is not None]),
                   step_ms_runs=[x["step_median_ms"] for x in results],
                   comm_share_runs=[x["comm_share"] for x in results])
        summary["ddp"].append(row)
        by_backend[backend] = (row, {r["round"]: x["step_median_ms"]
                                     for r, x in zip(mine, results)})
    if "braid" not in by_backend:
        return
    braid_row, braid_rounds = by_backend["braid"]
    for peer in PEERS:
        if peer not in by_backend:
            continue
        peer_row, peer_rounds = by_backend[peer]
        paired = [peer_rounds[k] / braid_rounds[k] for k in sorted(braid_rounds)
                  if k in peer_rounds]
        ratio = peer_row["step_ms"] / braid_row["step_ms"]
        summary["ratios"].append(dict(case, peer=peer, ratio=ratio, paired_runs=paired))
        if peer == "gloo":
            target = TARGETS[case["shape"]]
            summary["targets"].append(dict(case, target=target, ratio=ratio,
                                           met=ratio >= target,
                                           met_in_every_run=bool(paired)
                                           and min(paired) >= target))


def summarize_programs(summary, runs, load, pinning, nranks) -> None:
    case = {"load": load, "pinning": pinning, "nranks": nranks}
    digits = [r["result"] for r in runs if r["program"] == "train_digits"]
    if digits:
        step = median([d["step_ms"] for d in digits])
        wait = median([d["finish_wait_ms"] for d in digits])
        summary["train_digits"].append(dict(case, runs=len(digits), step_ms=step,
                                            finish_wait_ms=wait,
                                            comm_share=median([d["comm_share"] for d in digits]),
                                            step_ms_runs=[d["step_ms"] for d in digits]))
    for run in (r for r in runs if r["program"] == "gradsync_bench"):
        summary["gradsync_bench"].append(dict(case, round=run["round"],
                                              modes=run["result"]["modes"]))


# Output ------------------------------------------------------------------------------------

def ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}"


def pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def others(block: dict) -> str:
    """The CPU share other processes took while a condition's runs ran."""
    value = block["cpu_others_percent"]
    return pct(None if value is None else value / 100)


def spread(values: List[float]) -> str:
    return f"[{min(values):.2f}-{max(values):.2f}]" if len(values) > 1 else ""


def format_report(summary, blocks, skipped, host, args) -> str:
    out = [f"# train-bench: host {host['name']}, CPUs {host['cpus']}, started {host['started']}"
           f" UTC; DDP: {args.repeat} round(s), median of {args.steps} steps per run after "
           f"{args.warmup} warm-up, {args.threads} intra-op thread(s) per rank, buckets "
           f"{args.bucket_mb:g} MiB",
           "# comm = (step - step under a no-op comm hook) / step: the all-reduce time "
           "backward did not hide; [a-b]: the ratio's range over the rounds' paired runs"]
    if blocks:
        out.append("# CPU used by other processes per round and condition: " + ", ".join(
            f"{b['load']}/{b['pinning']} {others(b)}" for b in blocks))
    out += format_ddp(summary, args)
    out += format_scheduler_share(summary, args)
    out += format_programs(summary)
    if summary["targets"]:
        out.append("\n== Targets: DDP step gloo/braid (comm-bound >= 1.3, compute-bound >= 1.0)"
                   " ==")
        for t in summary["targets"]:
            every = ", in every round" if t["met_in_every_run"] else ""
            out.append(f"{SHAPE_TITLES[t['shape']]:>13} {t['nranks']} ranks {t['load']:>8} "
                       f"{t['pinning']:>8}: {t['ratio']:.2f} vs {t['target']:.1f}: "
                       f"{'met' + every if t['met'] else 'NOT met'}")
    for what, why in skipped.items():
        out.append(f"skipped {what}: {why}")
    return "\n".join(line.rstrip() for line in out)


def format_ddp(summary, args) -> List[str]:
    out = []
    for shape in args.shapes:
        rows = [r for r in summary["ddp"] if r["shape"] == shape]
        if not rows:
            continue
        r0 = rows[0]
        out.append(f"\n== DDP step, {SHAPE_TITLES[shape]}: MLP {'-'.join(map(str, r0['widths']))}"
                   f", {r0['params'] / 1e6:.3g} M parameters ({r0['gradient_mib']:.3g} MiB of "
                   f"gradients in {r0['buckets']} bucket(s)), batch {r0['batch']} per rank ==")
        backends = [b for b in args.backends if any(r["backend"] == b for r in rows)]
        peers = [p for p in PEERS if p in backends and "braid" in backends]
        out.append(f"{'load':<9}{'pinning':<9}{'ranks':>5} |"
                   + "".join(f"{b + ' ms':>10} {'comm':>5} |" for b in backends)
                   + "".join(f" {p + '/braid':<17}" for p in peers))
        for load in args.load:
            for pinning in args.pinning:
                for nranks in args.np:
                    case = [r for r in rows if (r["load"], r["pinning"], r["nranks"]) ==
                            (load, pinning, nranks)]
                    if not case:
                        continue
                    line = f"{load:<9}{pinning:<9}{nranks:>5} |"
                    for b in backends:
                        row = next((r for r in case if r["backend"] == b), None)
                        line += (f"{ms(row['step_ms']):>10} {pct(row['comm_share']):>5} |"
                                 if row else f"{'-':>10} {'-':>5} |")
                    for p in peers:
                        ratio = next((x for x in summary["ratios"] if x["peer"] == p and
                                      (x["load"], x["pinning"], x["shape"], x["nranks"]) ==
                                      (load, pinning, shape, nranks)), None)
                        line += (f" {ratio['ratio']:.2f} {spread(ratio['paired_runs']):<12}"
                                 if ratio else f" {'-':<17}")
                    out.append(line)
    return out


def format_scheduler_share(summary, args) -> List[str]:
    """Under load, how much CPU the spinners took while each backend ran, beside the step with
    no communication at all: where the no-op steps differ, so did the CPU the scheduler gave
    the job, not the communication."""
    rows = [r for r in summary["ddp"] if r.get("corunner_cores") is not None]
    if not rows:
        return []
    backends = [b for b in args.backends if any(r["backend"] == b for r in rows)]
    out = ["\n== Under load: CPUs' worth the spinners took during each backend's runs, and the "
           "no-op step (no communication) ==",
           f"{'load':<9}{'pinning':<9}{'ranks':>5} {'shape':<8}|"
           + "".join(f"{b + ' spin':>15} {'no-op ms':>9} |" for b in backends)]
    seen = []
    for r in rows:
        key = (r["load"], r["pinning"], r["nranks"], r["shape"])
        if key in seen:
            continue
        seen.append(key)
        line = f"{key[0]:<9}{key[1]:<9}{key[2]:>5} {key[3]:<8}|"
        for b in backends:
            row = next((x for x in rows if x["backend"] == b and
                        (x["load"], x["pinning"], x["nranks"], x["shape"]) == key), None)
            line += (f"{row['corunner_cores']:>15.2f} {ms(row['noop_step_ms']):>9} |" if row
                     else f"{'-':>15} {'-':>9} |")
        out.append(line)
    return out


def format_programs(summary) -> List[str]:
    out = []
    if summary["train_digits"]:
        out.append("\n== GradSync: train_digits (64-128-128-10 MLP, 102 KiB of gradients, "
                   "global batch 64) ==  comm = time in finish() / step")
        out.append(f"{'load':<9}{'pinning':<9}{'ranks':>5} {'step ms':>9} {'wait ms':>9} "
                   f"{'comm':>5}  runs (step ms)")
        for r in summary["train_digits"]:
            out.append(f"{r['load']:<9}{r['pinning']:<9}{r['nranks']:>5} {ms(r['step_ms']):>9} "
                       f"{ms(r['finish_wait_ms']):>9} {pct(r['comm_share']):>5}  "
                       + " ".join(ms(v) for v in r["step_ms_runs"]))
    if summary["gradsync_bench"]:
        out.append("\n== GradSync: gradsync_bench (step ms; comm = (step - no sync) / step) ==")
        out.append(f"{'load':<9}{'pinning':<9}{'ranks':>5} {'no sync':>9} "
                   f"{'after bwd':>9} {'comm':>5} {'GradSync':>9} {'comm':>5} "
                   f"{'small bkt':>9} {'comm':>5}")
        for r in summary["gradsync_bench"]:
            m = r["modes"]
            out.append(f"{r['load']:<9}{r['pinning']:<9}{r['nranks']:>5} "
                       f"{ms(m['nosync']['step_ms']):>9} "
                       + " ".join(f"{ms(m[k]['step_ms']):>9} {pct(m[k]['comm_share']):>5}"
                                  for k in ("after_backward", "gradsync", "gradsync_small")))
    return out


CSV_FIELDS = ["program", "load", "pinning", "shape", "nranks", "backend", "step_ms",
              "noop_step_ms", "comm_share", "cpu_ms", "runs", "gloo_over_braid",
              "gloo_view_over_braid", "mpi_over_braid"]


def write_csv(path: str, summary) -> None:
    """One row per DDP case and backend, per train_digits case and per gradsync_bench mode."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in summary["ddp"]:
            key = (row["load"], row["pinning"], row["shape"], row["nranks"])
            ratios = {x["peer"]: x["ratio"] for x in summary["ratios"]
                      if (x["load"], x["pinning"], x["shape"], x["nranks"]) == key}
            w.writerow(dict(row, program="ddp", gloo_over_braid=ratios.get("gloo"),
                            gloo_view_over_braid=ratios.get("gloo-view"),
                            mpi_over_braid=ratios.get("mpi")))
        for row in summary["train_digits"]:
            w.writerow(dict(row, program="train_digits", backend="braid"))
        for row in summary["gradsync_bench"]:
            for mode, values in row["modes"].items():
                w.writerow(dict(row, program="gradsync_bench", backend=mode, runs=1, **values))

#!/usr/bin/env python3
"""Turns a tools/train-bench --json file into a docs/results table file (kind "table", read by
tools/results-report): the DDP step tables, one row per condition and rank count, with each
backend's median step and communication share and the ratios to Braid with their per-round
range; under load also each backend's no-op step and the CPUs' worth the spinners took.

    bench/train/results_table.py RAW.json OUT.json --title "..." --note "..." [--note ...]
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import train_report  # noqa: E402  (PEERS, SHAPE_TITLES)


def spread(values):
    return {"median": round(values[0], 2), "min": round(min(values[1]), 2),
            "max": round(max(values[1]), 2)} if values[1] else round(values[0], 2)


def ddp_tables(report):
    summary, args = report["summary"], report["arguments"]
    tables = []
    for shape in args["shapes"]:
        rows = [r for r in summary["ddp"] if r["shape"] == shape]
        if not rows:
            continue
        backends = [b for b in args["backends"] if any(r["backend"] == b for r in rows)]
        peers = [p for p in train_report.PEERS if p in backends and "braid" in backends]
        r0 = rows[0]
        # Under load, the step with no communication and the CPU the spinners took meanwhile.
        shares = any(r.get("corunner_cores") is not None for r in rows)
        table = {"title": f"DDP step, {train_report.SHAPE_TITLES[shape]} (batch {r0['batch']} per "
                          f"rank): MLP {'-'.join(map(str, r0['widths']))}, "
                          f"{r0['params'] / 1e6:.3g} M parameters ({r0['gradient_mib']:.3g} MiB "
                          f"of gradients, {r0['buckets']} buckets)",
                 "columns": ["load", "pinning", "ranks"]
                 + [c for b in backends for c in (f"{b} step (ms)", f"{b} comm")]
                 + [f"{p}/braid" for p in peers]
                 + ([c for b in backends for c in (f"{b} no-op step (ms)",
                                                    f"{b} spinners (CPUs)")] if shares else []),
                 "rows": []}
        for load in args["load"]:
            for pinning in args["pinning"]:
                for nranks in args["np"]:
                    key = (load, pinning, shape, nranks)
                    case = {r["backend"]: r for r in rows
                            if (r["load"], r["pinning"], r["shape"], r["nranks"]) == key}
                    if not case:
                        continue
                    row = [load, pinning, nranks]
                    for b in backends:
                        r = case.get(b)
                        row += ([round(r["step_ms"], 1), f"{r['comm_share'] * 100:.0f}%"]
                                if r else ["-", "-"])
                    for p in peers:
                        x = next((x for x in summary["ratios"] if x["peer"] == p and
                                  (x["load"], x["pinning"], x["shape"], x["nranks"]) == key), None)
                        row.append(spread((x["ratio"], x["paired_runs"])) if x else "-")
                    for b in backends if shares else []:
                        r = case.get(b)
                        cores = r.get("corunner_cores") if r else None
                        row += [round(r["noop_step_ms"], 1) if r else "-",
                                round(cores, 2) if cores is not None else "-"]
                    table["rows"].append(row)
        tables.append(table)
    return tables


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("raw", help="tools/train-bench --json output")
    p.add_argument("out", help="the table file to write (docs/results/NAME.json)")
    p.add_argument("--title", required=True)
    p.add_argument("--machine", default="the shared 2-core test machine")
    p.add_argument("--note", action="append", default=[])
    a = p.parse_args()
    with open(a.raw) as f:
        report = json.load(f)
    args, host = report["arguments"], report["host"]
    others = [c["cpu_others_percent"] for c in report["conditions"]
              if c.get("cpu_others_percent") is not None]
    machine = a.machine + (f"; other processes used {min(others):.0f}-{max(others):.0f}% of the "
                           "CPU per round and condition" if others else "")
    notes = [f"{args['repeat']} rounds, each condition and backend interleaved; a DDP figure is "
             f"the median of {args['steps']} steps per run after {args['warmup']} warm-up, "
             f"{args['threads']} intra-op thread per rank, buckets {args['bucket_mb']:g} MiB; "
             "[a-b]: the ratio's range over the rounds' paired runs.",
             "comm = (step - step under a no-op comm hook) / step: the all-reduce time backward "
             "did not hide (negative: within the noise)."] + a.note
    out = {"kind": "table",
           "about": {"title": a.title, "topic": "training", "machine": machine, "notes": notes,
                     "source": f"tools/train-bench --json {a.raw}"},
           "date": f"{host['started']} to {host['finished']}",
           "cpus": len(host["cpus"]),
           "command": "tools/train-bench " + " ".join(
               f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, list) else v}"
               for k, v in args.items()
               if k in ("np", "backends", "programs", "load", "pinning", "repeat")),
           "tables": ddp_tables(report)}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

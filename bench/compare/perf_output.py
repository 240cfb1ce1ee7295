"""Reads the text that nccl-tests style *_perf programs print.

One parser serves Braid's all_reduce_perf, the peer benchmarks of this folder and NVIDIA's
nccl-tests, old and new layouts alike: a result row is a line that does not start with '#' and
whose first fields are "size count type redop root", followed by out-of-place and in-place
groups of "time algbw busbw #wrong". Anything else (launcher chatter, warnings of other ranks)
is skipped, so a format drift shows up as missing rows, which the caller reports as a failure.

busbw is derived again from size and time (busbw = size/time * the collective's factor, 2(n-1)/n
for allreduce; see bus_factor) because the printed
column keeps two decimals only (0.00 GB/s at 8 B); the printed value is kept for checking.
"""

import dataclasses
import re
from typing import List, Optional

MODES = ("out-of-place", "in-place")

# braidrun --tag-output and similar launchers prefix lines with "[rank0]: " or "[1,0]<stdout>:".
_LINE_PREFIX = re.compile(r"^\s*\[[^\]]*\](?:<stdout>)?:\s?")
_RANK_LINE = re.compile(r"^#\s+Rank\s+\d+\s")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")


@dataclasses.dataclass
class ModeResult:
    """One mode (out-of-place or in-place) of one size."""

    time_us: float
    busbw: float  # GB/s, derived from size and time
    algbw: float  # GB/s, derived from size and time
    printed_busbw: float
    printed_algbw: float
    wrong: Optional[int]  # None when the program did not check (N/A)


@dataclasses.dataclass
class Row:
    size: int  # bytes
    count: int
    dtype: str
    redop: str
    modes: dict  # mode name -> ModeResult, absent when the program printed N/A


@dataclasses.dataclass
class PerfOutput:
    rows: List[Row]
    nranks: Optional[int]
    avg_busbw: Optional[float]
    out_of_bounds: Optional[int]

    def row(self, size: int) -> Optional[Row]:
        for r in self.rows:
            if r.size == size:
                return r
        return None

    @property
    def total_wrong(self) -> int:
        return sum(m.wrong or 0 for r in self.rows for m in r.modes.values())


# Collectives whose size column is n blocks of one rank's count (nccl-tests' per-rank ones).
PER_RANK_COLLECTIVES = ("allgather", "reducescatter", "alltoall", "gather", "scatter")


def bus_factor(nranks: int, collective: str = "allreduce") -> float:
    """busbw / (size / time), nccl-tests' factor per collective: 2(n-1)/n for allreduce, (n-1)/n
    for the per-rank collectives, 1 for reduce, broadcast and sendrecv."""
    if nranks <= 0:
        return 1.0
    if collective == "allreduce":
        return 2.0 * (nranks - 1) / nranks
    if collective in PER_RANK_COLLECTIVES:
        return (nranks - 1) / nranks
    return 1.0


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def _parse_mode(fields: List[str], size: int, nranks: Optional[int],
                collective: str) -> Optional[ModeResult]:
    time_us, algbw, busbw = (_number(f) for f in fields[:3])
    if time_us is None or time_us <= 0 or algbw is None or busbw is None:
        return None  # "N/A": the program does not run this mode
    wrong = _number(fields[3])
    derived_algbw = size / (time_us * 1e3)
    # Without the rank count, the printed ratio busbw/algbw is the best estimate of the factor.
    factor = bus_factor(nranks, collective) if nranks else (busbw / algbw if algbw > 0 else 1.0)
    return ModeResult(time_us=time_us, busbw=derived_algbw * factor, algbw=derived_algbw,
                      printed_busbw=busbw, printed_algbw=algbw,
                      wrong=None if wrong is None else int(wrong))


def _parse_row(line: str, nranks: Optional[int], collective: str) -> Optional[Row]:
    fields = line.split()
    if len(fields) < 13 or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    if _number(fields[4]) is None:  # root
        return None
    size = int(fields[0])
    modes = {}
    for name, start in zip(MODES, (5, 9)):
        result = _parse_mode(fields[start:start + 4], size, nranks, collective)
        if result is not None:
            modes[name] = result
    return Row(size=size, count=int(fields[1]), dtype=fields[2], redop=fields[3], modes=modes)


def parse(text: str, nranks: Optional[int] = None, collective: str = "allreduce") -> PerfOutput:
    """Parses one program's stdout. nranks, when known, fixes the busbw factor (with the
    collective's formula); otherwise it is taken from the "#  Rank" device lines printed."""
    lines = [_LINE_PREFIX.sub("", raw, count=1) for raw in text.splitlines()]
    rank_lines = sum(1 for line in lines if _RANK_LINE.match(line))
    if nranks is None and rank_lines:
        nranks = rank_lines
    rows, avg_busbw, out_of_bounds = [], None, None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            match = _AVG_BUSBW.match(stripped)
            if match:
                avg_busbw = _number(match.group(1))
            match = _OUT_OF_BOUNDS.match(stripped)
            if match:
                out_of_bounds = int(match.group(1))
            continue
        row = _parse_row(stripped, nranks, collective)
        if row is not None:
            rows.append(row)
    return PerfOutput(rows=rows, nranks=nranks, avg_busbw=avg_busbw, out_of_bounds=out_of_bounds)

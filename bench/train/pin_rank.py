"""Binds this rank to one CPU, then becomes the rank's program (exec).

    braidrun -n 4 python3 bench/train/pin_rank.py --cpus 0,1 -- PROGRAM ARGS...
    mpirun --bind-to none -np 4 python3 bench/train/pin_rank.py --cpus 0,1 -- PROGRAM ARGS...

Local rank r (LOCAL_RANK from braidrun/torchrun, OMPI_COMM_WORLD_LOCAL_RANK from mpirun) gets
CPU cpus[r % len(cpus)]: its own core while ranks do not outnumber the CPUs, round robin
beyond (braidrun --bind-to core refuses that case, and a 2-core machine running 4 ranks needs
it). The binding is made before exec, so every thread the program starts (torch's, the
communication threads) inherits it.
"""

import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", required=True, help="comma-separated CPU numbers, in rank order")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no program to run")
    cpus = [int(c) for c in args.cpus.split(",")]
    rank = int(os.environ.get("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "-1")))
    if rank < 0:
        sys.exit("pin_rank.py: neither LOCAL_RANK nor OMPI_COMM_WORLD_LOCAL_RANK is set")
    os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()

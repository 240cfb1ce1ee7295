#!/usr/bin/env python3
"""Checks what the CUDA kernels were compiled into, without a GPU.

Reads ptxas's resource report of every kernel and device function (the build keeps it beside
each object: cmake/ptxas_report) and the SASS of the kernel library (cuobjdump -sass), and fails
when:
  - a function has a stack frame over 1 KiB (a kernel parameter or argument struct copied into
    local memory, a large local array) or spills over 128 bytes, on any architecture;
  - a kernel whose data loops must move 16-byte packs (the collective and point-to-point
    kernels, whose SASS holds the device primitives' copyBytes and reduceElements, called from
    the schedules; the standalone reduce kernel) has no 128-bit global loads and stores: the
    packs are the only 128-bit global accesses these kernels make.

  check_kernel_resources.py --objects DIR --library LIB --cuobjdump PATH
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

MAX_STACK = 1024
MAX_SPILL_STORES = 128
# Kernels whose loops must move 16-byte packs (mangled names contain these). cuobjdump lists
# entry functions only; a kernel's listing includes the device functions it calls.
DATA_LOOPS = ("collectiveKernel", "p2pKernel", "reduceKernel")

COMPILING = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+a?)'")
PROPERTIES = re.compile(r"Function properties for (\S+)")
FIGURES = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
ARCH = re.compile(r"ptxas info\s*:.*for '(sm_\d+a?)'")


def ptxas_reports(objects):
    """(file, arch, function, stack, spill stores) for every function ptxas reported."""
    rows = []
    files = sorted(pathlib.Path(objects).rglob("*.ptxas"))
    for path in files:
        arch = "?"
        function = None
        for line in path.read_text(errors="replace").splitlines():
            m = ARCH.search(line)
            if m:
                arch = m.group(1)
            m = PROPERTIES.search(line)
            if m:
                function = m.group(1)
                continue
            m = FIGURES.search(line)
            if m and function is not None:
                rows.append((path.name, arch, function, int(m.group(1)), int(m.group(2))))
                function = None
    return files, rows


def sass_functions(cuobjdump, library):
    """{(arch, function): SASS text} of every function in the library's device code."""
    # cuobjdump disassembles through nvdisasm, which the same wheels put beside it. One cubin
    # per object and architecture, disassembled side by side (the two largest take 100 s on one
    # core): extracted first, then one cuobjdump per cubin.
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(cuobjdump).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([cuobjdump, "-xelf", "all", str(pathlib.Path(library).resolve())],
                       check=True, capture_output=True, cwd=folder, env=env)
        cubins = sorted(pathlib.Path(folder).glob("*.cubin"), key=lambda p: -p.stat().st_size)
        if not cubins:
            raise RuntimeError(f"cuobjdump -xelf found no cubin in {library}")

        def disassemble(cubin):
            return subprocess.run([cuobjdump, "-sass", str(cubin)], check=True,
                                  capture_output=True, text=True, env=env).stdout

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            listings = list(pool.map(disassemble, cubins))
    functions = {}
    for out in listings:
        arch = "?"
        name = None
        for line in out.splitlines():
            m = re.match(r"\s*(?:arch = |code for )(sm_\d+a?)", line)
            if m:
                arch = m.group(1)
            m = re.match(r"\s*Function : (\S+)", line)
            if m:
                name = (arch, m.group(1))
                functions[name] = []
                continue
            if name is not None:
                functions[name].append(line)
    return {k: "\n".join(v) for k, v in functions.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", required=True, help="the kernel library's object folder")
    parser.add_argument("--library", required=True, help="the kernel library (.a)")
    parser.add_argument("--cuobjdump", default="")
    args = parser.parse_args()
    failures = []

    files, rows = ptxas_reports(args.objects)
    if not files or not rows:
        print(f"no ptxas report under {args.objects}: the CUDA kernels must be built through "
              "cmake/ptxas_report (kernels/CMakeLists.txt)")
        return 1
    print(f"{'architecture':<12} {'stack':>6} {'spills':>6}  function  (ptxas -v, {len(files)} "
          "objects)")
    for name, arch, function, stack, spills in rows:
        flag = ""
        if stack > MAX_STACK or spills > MAX_SPILL_STORES:
            flag = "  <- over the limit"
            failures.append(f"{function} on {arch}: {stack} bytes stack frame, {spills} bytes "
                            f"spill stores (limits {MAX_STACK} and {MAX_SPILL_STORES})")
        print(f"{arch:<12} {stack:>6} {spills:>6}  {function}{flag}")

    if not args.cuobjdump or not pathlib.Path(args.cuobjdump).exists():
        failures.append("cuobjdump not found (tools/setup installs it from PyPI's "
                        "nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm): the SASS is unchecked")
    else:
        sass = sass_functions(args.cuobjdump, args.library)
        loops = {k: v for k, v in sass.items() if any(d in k[1] for d in DATA_LOOPS)}
        if not loops:
            failures.append("no data loop (" + ", ".join(DATA_LOOPS) + ") in the SASS")
        print(f"\n{'architecture':<12} {'LDG.128':>7} {'STG.128':>7}  kernel (SASS)")
        for (arch, function), text in sorted(loops.items()):
            loads = len(re.findall(r"\bLDG\.E\.128\b", text))
            stores = len(re.findall(r"\bSTG\.E\.128\b", text))
            flag = ""
            if loads == 0 or stores == 0:
                flag = "  <- no 128-bit global loads or stores"
                failures.append(f"{function} on {arch}: {loads} LDG.E.128, {stores} STG.E.128")
            print(f"{arch:<12} {loads:>7} {stores:>7}  {function}{flag}")

    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"\nevery function within {MAX_STACK} bytes of stack and {MAX_SPILL_STORES} bytes of "
          "spills; every data-moving kernel on 128-bit loads and stores")
    return 0


if __name__ == "__main__":
    sys.exit(main())

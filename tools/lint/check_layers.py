#!/usr/bin/env python3
"""Fails when a library source includes a header of a higher layer.

The layers, bottom to top (docs/design.md, "Layers"). A file may include headers of its own
layer and of the layers below it; the public headers (include/) are below everything. The
folders on top (src/gradsync, python/) may use the public API only.

    tools/lint/check_layers.py [ROOT]     exit 0 when every include goes down or sideways
"""
import os
import re
import sys

LAYERS = [
    "src/util",
    "src/patterns",
    "kernels",
    "src/device",
    "transports",
    "src/core",
    "src/algorithms",
    "src/tuner",
    "src/comm",
    "src/exec",
    "src/api",
]
# Built on the public API alone (include/nccl.h, include/braid/): no library internals.
PUBLIC_ONLY = ["src/gradsync", "python"]
SOURCES = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """Index of the layer `path` (relative to the root) lies in, or None."""
    for i, folder in enumerate(LAYERS):
        if path == folder or path.startswith(folder + "/"):
            return i
    return None


def resolve(root, source, name):
    """The repository path an include names: next to the file, then on the include path."""
    for base in (os.path.dirname(source), "src", ".", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    problems = []
    checked = 0
    for top in LAYERS + PUBLIC_ONLY:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(folder, f), root)
                mine = layer_of(path)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                checked += 1
                for name in INCLUDE.findall(text):
                    target = resolve(root, path, name)
                    if target is None or target.startswith("include/"):
                        continue  # system, generated or public headers
                    theirs = layer_of(target)
                    if mine is None:  # public-API-only folders
                        if theirs is not None:
                            problems.append(f"{path}: includes {target}, a library internal "
                                            f"({LAYERS[theirs]}); use the public API")
                    elif theirs is not None and theirs > mine:
                        problems.append(f"{path} ({LAYERS[mine]}) includes {target}, "
                                        f"which is in a higher layer ({LAYERS[theirs]})")
    for p in problems:
        print(p)
    if checked == 0:
        print(f"no sources found under {root}")
        return 1
    print(f"{checked} files checked, {len(problems)} includes going up a layer")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch's own distributed test suite (torch/testing/_internal/distributed/distributed_test.py)
over Braid or gloo, driven as PyTorch's test/distributed/test_distributed_spawn.py drives it:
one class, TestDistBackendWithSpawn, whose tests each spawn WORLD_SIZE ranks.

    BACKEND=braid WORLD_SIZE=2 python pytorch_suite.py [-k PATTERN ...] [--report FILE.json]

(-k as unittest's: a test runs when its name contains any pattern, or matches it as a glob;
with --exact, when its name is one of them.)
--report writes {test name: "ok" | "skipped: why" | "failed: text"} for test_pytorch_suite.py,
which runs the suite over gloo and Braid and compares them.

The suite knows only the backends PyTorch ships, so Braid is told to take gloo's branches (both
are CPU backends with the same set of operations). The adaptation is a rewrite of the suite's
source as it is loaded, and it changes exactly this, nothing when BACKEND is gloo:
  1. `BACKEND == "gloo"` reads `BACKEND in ("gloo", "braid")`, and `!=` the converse;
  2. `require_backend(...)` (tests for listed backends) lets braid run the tests it lets gloo run;
  3. DistTestCases.backend_feature's "ddp", "subgroup" and "plugin" sets include braid (gloo is
     in the first two; "plugin" marks a backend registered through register_backend);
  4. (PyTorch 1.13) DDP's ReplicatedTensor switch, which the suite turns on in every rank, stays
     off: torch.distributed._shard fails to import on Python 3.11 (for every backend).
The same rewrite serves PyTorch 1.13's suite and 2.x's (whose require_backend is called
require_backend_is_available, with the same test inside).
Tests the suite skips for gloo are skipped for braid the same way.
"""

import importlib.util
import os
import sys
import types

import torch
import torch.distributed as dist

import braid.torch  # noqa: F401  (registers the backend, also in every spawned rank)

if "BACKEND" not in os.environ or "WORLD_SIZE" not in os.environ:
    sys.exit("pytorch_suite.py: set BACKEND (braid or gloo) and WORLD_SIZE")
os.environ.setdefault("TEMP_DIR", "/tmp")


def _load_suite():
    import torch.testing._internal.common_distributed as cd

    for feature in ("ddp", "subgroup", "plugin"):
        cd.DistTestCases.backend_feature[feature].add("braid")
    spec = importlib.util.find_spec("torch.testing._internal.distributed.distributed_test")
    with open(spec.origin) as f:
        source = f.read()
    rewrites = [
        ('BACKEND == "gloo"', 'BACKEND in ("gloo", "braid")'),
        ('BACKEND != "gloo"', 'BACKEND not in ("gloo", "braid")'),
        ("    if BACKEND not in backends:\n",
         '    if BACKEND not in backends and not (BACKEND == "braid" and "gloo" in backends):\n'),
    ]
    # PyTorch 1.13 only (2.x has no such switch).
    optional = [("_set_ddp_with_replicated_tensor(True)", "_set_ddp_with_replicated_tensor(False)")]
    for old, new in rewrites + optional:
        if old not in source and (old, new) not in optional:
            sys.exit(f"pytorch_suite.py: the suite no longer contains {old!r}: update the rewrite")
        source = source.replace(old, new)
    module = types.ModuleType("braid_distributed_test")
    module.__file__ = spec.origin
    sys.modules[module.__name__] = module
    exec(compile(source, spec.origin, "exec"), module.__dict__)
    return module


suite = _load_suite()

# BRAID_TORCH_SUITE_START=fork starts each test's ranks by fork instead of spawn, as PyTorch's
# test_distributed_fork.py did: the same tests without each rank importing torch again (about
# half the time on 2 cores). The parent never initialises a process group, so nothing of Braid
# or gloo is running when it forks. Spawn stays the default (test_distributed_spawn.py's way).
START_METHOD = os.environ.get("BRAID_TORCH_SUITE_START", "spawn")
if START_METHOD not in ("spawn", "fork"):
    sys.exit(f"pytorch_suite.py: BRAID_TORCH_SUITE_START={START_METHOD!r} is neither spawn nor fork")


class TestDistBackendWithSpawn(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if START_METHOD == "fork":
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()


def main():
    import argparse
    import json
    import unittest

    parser = argparse.ArgumentParser()
    parser.add_argument("-k", dest="patterns", action="append", default=[])
    parser.add_argument("--exact", action="store_true", help="-k names whole test names")
    parser.add_argument("--report")
    args = parser.parse_args()
    assert dist.is_available()
    loader = unittest.TestLoader()
    loader.testNamePatterns = [
        f"*.{p}" if args.exact else p if "*" in p else f"*{p}*" for p in args.patterns
    ] or None
    tests = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    names = [t._testMethodName for t in tests]  # the run drops the tests it has run
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(tests)
    if args.report:
        outcome = {}
        for name in names:
            outcome[name] = "ok"
        for test, why in result.skipped:
            outcome[test._testMethodName] = f"skipped: {why}"
        for test, text in result.failures + result.errors:
            # The head names the failing call, the tail the exception: keep both.
            short = text if len(text) <= 8000 else text[:4000] + "\n...\n" + text[-4000:]
            outcome[test._testMethodName] = f"failed: {short}"
        with open(args.report, "w") as f:
            json.dump(outcome, f, indent=1, sort_keys=True)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()

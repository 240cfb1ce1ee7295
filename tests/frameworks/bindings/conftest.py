"""Shared set-up of the binding tests: the build tree's package on sys.path (CTest sets
PYTHONPATH), a clear skip when the extension was not built, and ranks as threads."""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))

try:
    import braid  # noqa: F401
except ImportError as e:
    # CTest treats exit status 77 as "skipped" (SKIP_RETURN_CODE).
    pytest.exit("SKIPPED: the Python bindings (braid._braid) were not built or do not import: "
                "install python3-dev and pybind11-dev (tools/setup-frameworks) and rebuild (%s)"
                % e, returncode=77)


def run_threads(comms, body, timeout=120):
    """Runs body(comm) on one thread per communicator; returns the results in rank order and
    re-raises the first exception. A thread still running after `timeout` fails the test."""
    results = [None] * len(comms)
    errors = [None] * len(comms)

    def target(i):
        try:
            results[i] = body(comms[i])
        except BaseException as e:  # noqa: B902 - handed to the main thread
            errors[i] = e

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank thread is still running after %s s" % timeout
    for e in errors:
        if e is not None:
            raise e
    return results

"""Shared set-up of the binding tests: this folder on sys.path, and ranks as threads.
The build tree's package comes from PYTHONPATH (CTest sets it); run_pytest.sh reports the tests
as skipped, with the reason, when it does not import."""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))


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

"""braid.torch.monitored_barrier against gloo's dist.monitored_barrier, in the same run: the
same outcomes and the same texts. All ranks arriving (repeated calls), one rank silent (rank 0
names it; a rank that did arrive reports that it waits on rank 0), several silent with
wait_all_ranks (all named), a timeout of zero; at 2 and 3 ranks."""

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import run_ranks  # noqa: E402

TIMEOUT_MS = 1000


def _scenario(rank, world, backend, silent, wait_all):
    import datetime
    import os
    import re
    import time

    import torch.distributed as dist

    import braid.torch

    os.environ.pop("BRAID_TIMEOUT_S", None)  # the group's timeout must reach the backend
    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=4))
    barrier = braid.torch.monitored_barrier  # gloo groups go on to torch's own function
    timeout = datetime.timedelta(milliseconds=TIMEOUT_MS)
    for _ in range(3):  # every call has keys of its own
        barrier(timeout=timeout)
    store = dist.distributed_c10d._get_default_store()
    if not silent:
        barrier(timeout=timeout, wait_all_ranks=wait_all)
    elif rank in silent:
        store.wait([f"checked/{backend}"], datetime.timedelta(seconds=30))
    elif rank == 0:
        start = time.monotonic()
        with pytest_raises() as failure:
            barrier(timeout=timeout, wait_all_ranks=wait_all)
        elapsed = time.monotonic() - start
        text = str(failure.value)
        print(f"{backend} rank 0 after {elapsed:.2f} s: {text.splitlines()[0]}", flush=True)
        if wait_all:
            names = ", ".join(str(r) for r in silent)
            expected = f"[Rank 0]: Ranks {names} failed to pass monitoredBarrier in {TIMEOUT_MS} ms"
        else:
            expected = f"[Rank 0]: Rank {silent[0]} failed to pass monitoredBarrier in {TIMEOUT_MS} ms"
        assert expected in text, text
        assert 0.9 < elapsed < 4, elapsed
        store.set(f"checked/{backend}", "1")
    else:  # arrived, waits for a release that does not come
        with pytest_raises() as failure:
            barrier(timeout=timeout, wait_all_ranks=wait_all)
        assert re.search(f"Rank {rank} successfully reached monitoredBarrier, but received "
                         "errors while waiting for send/recv from rank 0", str(failure.value)), \
            str(failure.value)
        store.wait([f"checked/{backend}"], datetime.timedelta(seconds=30))
    if rank == 0 and not silent:
        with pytest_raises() as failure:  # no time at all: rank 0 gives up before looking
            barrier(timeout=datetime.timedelta(seconds=0))
        assert "Rank 0 timed out in monitoredBarrier" in str(failure.value), str(failure.value)
    # Rank 0 serves the store: it leaves last.
    store.add(f"finished/{backend}", 1)
    while rank == 0 and store.add(f"finished/{backend}", 0) < world:
        time.sleep(0.01)


class pytest_raises:
    """pytest.raises(RuntimeError) for the spawned ranks (pytest is not imported there)."""

    def __enter__(self):
        self.value = None
        return self

    def __exit__(self, kind, value, tb):
        assert kind is not None and issubclass(kind, RuntimeError), f"no RuntimeError ({kind})"
        self.value = value
        return True


@pytest.mark.parametrize("backend", ["gloo", "braid"])
@pytest.mark.parametrize("world,silent,wait_all", [
    (2, (), False), (3, (), True),  # everyone arrives
    (2, (1,), False), (3, (2,), False),  # one rank silent
    (3, (1, 2), False), (3, (1, 2), True),  # first named, then all named
])
def test_monitored_barrier(backend, world, silent, wait_all):
    run_ranks(_scenario, world, backend, list(silent), wait_all, timeout=60)

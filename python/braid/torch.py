"""Braid as a torch.distributed backend.

``import braid.torch`` registers the backend "braid"; then

    torch.distributed.init_process_group("braid", rank=..., world_size=...)

runs every collective of the group (and DistributedDataParallel's gradient
all-reduce) through Braid on CPU tensors. ``braid.torch.DistributedDataParallel``
(or DDP built inside ``braid.torch.shared_memory()``) puts DDP's gradient buckets
in shared memory, so their all-reduces take Braid's one-sided ZeroCopy algorithm.
See docs/pytorch.md.
"""

import contextlib
import os
import warnings

import torch
import torch.distributed as dist

from braid import _braid_torch

ProcessGroupBraid = _braid_torch.ProcessGroupBraid
BACKEND_NAME = "braid"
SHARED_BUCKETS_ENV = "BRAID_TORCH_SHARED_BUCKETS"


def create_process_group(store, rank, world_size, timeout):
    """The creator torch calls for init_process_group/new_group("braid")."""
    return _braid_torch.create_process_group(store, rank, world_size, timeout)


def shared_buckets_enabled():
    """False when BRAID_TORCH_SHARED_BUCKETS=0 (or "false", "off", "no")."""
    value = os.environ.get(SHARED_BUCKETS_ENV, "1").strip().lower()
    return value not in ("0", "false", "off", "no")


_warned_not_installed = False


def _warn_not_installed():
    global _warned_not_installed
    _warned_not_installed = True
    warnings.warn("braid.torch.shared_memory(): c10 kept another CPU allocator (installed with a "
                  "higher priority); tensors stay in plain memory", RuntimeWarning, stacklevel=3)


@contextlib.contextmanager
def shared_memory():
    """While open, CPU tensors of 1 MiB or more are allocated in memory that the process
    group's peers on this host can map (ncclMemAlloc). A Braid process group registers such a
    tensor's memory the first time it all-reduces it; an all-reduce whose buffers are registered
    on every rank runs Braid's ZeroCopy algorithm. Process-wide and nestable; a no-op when
    BRAID_TORCH_SHARED_BUCKETS=0."""
    if not shared_buckets_enabled():
        yield
        return
    if not _braid_torch._enter_shared_scope() and not _warned_not_installed:
        _warn_not_installed()
    try:
        yield
    finally:
        _braid_torch._leave_shared_scope()


def shared_allocator_stats():
    """{"installed", "depth", "allocations", "bytes", "registrations"} of the shared allocator."""
    return _braid_torch._shared_allocator_stats()


def is_shared(tensor):
    """True when the tensor's data lies in shared (ncclMemAlloc) memory."""
    return _braid_torch._is_shared(tensor)


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """torch's DistributedDataParallel with its gradient buckets in shared memory.

    The buckets are allocated while DDP is built and rebuilt once, in the forward pass after the
    first backward: this class opens shared_memory() around __init__ and around its first two
    forward() calls with gradients enabled, and nowhere else. Everything else is torch's DDP."""

    def __init__(self, *args, **kwargs):
        with shared_memory():
            super().__init__(*args, **kwargs)
        self._braid_shared_forwards = 2

    def forward(self, *inputs, **kwargs):
        if self._braid_shared_forwards > 0 and torch.is_grad_enabled():
            self._braid_shared_forwards -= 1
            with shared_memory():
                return super().forward(*inputs, **kwargs)
        return super().forward(*inputs, **kwargs)


def _register():
    # Importing twice (or under another name) must not register twice: torch asserts.
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, create_process_group)


_register()

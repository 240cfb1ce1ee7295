"""Braid as a torch.distributed backend.

``import braid.torch`` registers the backend "braid"; then

    torch.distributed.init_process_group("braid", rank=..., world_size=...)

runs every collective of the group (and DistributedDataParallel's gradient
all-reduce) through Braid on CPU tensors. See docs/pytorch.md.
"""

import torch.distributed as dist

from braid import _braid_torch

ProcessGroupBraid = _braid_torch.ProcessGroupBraid
BACKEND_NAME = "braid"


def create_process_group(store, rank, world_size, timeout):
    """The creator torch calls for init_process_group/new_group("braid")."""
    return _braid_torch.create_process_group(store, rank, world_size, timeout)


def _register():
    # Importing twice (or under another name) must not register twice: torch asserts.
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, create_process_group)


_register()

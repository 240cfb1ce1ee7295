"""PyTorch 2.5 and later load this at ``import torch`` (the entry point group "torch.backends",
declared in pyproject.toml), so ``torch.distributed.init_process_group("braid")`` works in a
script that never imports braid. It only registers the backend's name, with a creator that
imports ``braid.torch`` when the first group is made: ``import torch`` stays as quick as
before, and never fails because of Braid (TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns it off, as it
does every such extension). A module of its own, outside the package: loading it imports
nothing of Braid. Older torch versions have no such hook: there, ``import
braid.torch`` before creating a group."""

import warnings

BACKEND_NAME = "braid"


def _create(store, rank, world_size, timeout):
    import braid.torch  # the extension and the rest of the backend (its DDP, hooks, ...)

    return braid.torch.create_process_group(store, rank, world_size, timeout)


def register():
    try:
        import torch.distributed as dist

        if not dist.is_available() or BACKEND_NAME.upper() in dist.Backend._plugins:
            return
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu"])
    except Exception as e:  # noqa: BLE001 - a broken Braid must not break `import torch`
        warnings.warn(f"braid: the backend 'braid' was not registered at import torch ({e}); "
                      "import braid.torch to register it and see why")

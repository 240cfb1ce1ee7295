"""Skips the whole folder, saying why, when torch or Braid's PyTorch extension is missing."""

import pytest

SKIP_MARK = "BRAID-TORCH-SKIP"


def _why_unavailable():
    try:
        import torch.distributed as dist
    except ImportError as e:
        return f"torch is not installed for this interpreter ({e}); run tools/setup-frameworks"
    if not dist.is_available():
        return "this torch was built without torch.distributed"
    try:
        import braid.torch  # noqa: F401
    except ImportError as e:
        return (f"Braid's PyTorch extension is not importable ({e}); build the target "
                "braid_torch_extension and set PYTHONPATH to build/python")
    return None


_reason = _why_unavailable()


def pytest_collection_modifyitems(config, items):
    if _reason is None:
        return
    print(f"\n{SKIP_MARK}: {_reason}")
    for item in items:
        item.add_marker(pytest.mark.skip(reason=f"{SKIP_MARK}: {_reason}"))

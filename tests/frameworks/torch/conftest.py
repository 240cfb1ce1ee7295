"""Skips the whole folder, saying why, when torch is missing; fails it when torch is there but
Braid's PyTorch extension does not load (a backend that fails to load is broken, not absent)."""

import pytest

SKIP_MARK = "BRAID-TORCH-SKIP"


def _why_unavailable():
    try:
        import torch.distributed as dist
    except ImportError as e:
        return f"torch is not installed for this interpreter ({e}); run tools/setup-frameworks"
    if not dist.is_available():
        return "this torch was built without torch.distributed"
    return None


def _why_broken():
    try:
        import braid.torch  # noqa: F401
    except ImportError as e:
        return (f"Braid's PyTorch extension does not load ({e}); build the target "
                "braid_torch_extension (braid_torch2_extension) and set PYTHONPATH to "
                "build/python (build/python-torch2)")
    return None


_reason = _why_unavailable()
_broken = None if _reason else _why_broken()


def pytest_collection_modifyitems(config, items):
    if _broken:
        pytest.exit(f"FAILED: {_broken}", returncode=1)
    if _reason is None:
        return
    print(f"\n{SKIP_MARK}: {_reason}")
    for item in items:
        item.add_marker(pytest.mark.skip(reason=f"{SKIP_MARK}: {_reason}"))


def pytest_sessionfinish(session, exitstatus):
    """Exit status 77 (CTest: skipped) where nothing passed or failed and every test skipped with
    a BRAID-TORCH-SKIP reason (pytest says 0, or 5 where a whole module skipped at collection); a
    run with a failure keeps its failing status."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus not in (0, 5) or reporter is None:
        return
    stats = reporter.stats
    if any(stats.get(key) for key in ("passed", "failed", "error", "xpassed", "xfailed")):
        return
    skipped = stats.get("skipped", [])
    if skipped and all(SKIP_MARK in str(report.longrepr) for report in skipped):
        # The reasons themselves, once each: tools/test judges a skip by what it says.
        reasons = {str(report.longrepr[2]) if isinstance(report.longrepr, tuple)
                   else str(report.longrepr) for report in skipped}
        for why in sorted(reasons):
            print(f"\n{why}")
        print(f"\n{SKIP_MARK}: every test skipped, saying why: exit status 77")
        session.exitstatus = 77

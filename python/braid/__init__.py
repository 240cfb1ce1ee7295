"""Braid for Python: NCCL's communicators and collectives on numpy arrays (host memory), host
streams and gradient synchronisation. See docs/python.md.

    import braid, numpy as np
    comms = braid.Communicator.init_all(2)          # two ranks in this process
    xs = [np.arange(4.0) * (r + 1) for r in range(2)]
    with braid.group():                             # one thread drives both ranks
        for c, x in zip(comms, xs):
            c.all_reduce(x, op="sum")
"""

try:
    from . import _braid
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "braid's extension module (braid._braid) is missing or does not load: build it with "
        "CMake (python3-dev and pybind11-dev installed; PYTHONPATH=build/python) or "
        "`pip install ./python` (%s)" % e) from e

from ._braid import DataType, ReduceOp, SPLIT_NOCOLOR
from .communicator import Communicator, group
from .errors import BraidError
from .gradsync import GradSync
from .stream import Stream

__all__ = [
    "BraidError", "Communicator", "DataType", "GradSync", "ReduceOp", "SPLIT_NOCOLOR", "Stream",
    "get_unique_id", "group", "version",
]


def get_unique_id():
    """ncclGetUniqueId: 128 bytes to hand to every rank's Communicator(). Under braidrun (or with
    MASTER_ADDR/MASTER_PORT/BRAID_COMM_SECRET set) every process gets the same id."""
    return _braid.get_unique_id()


def version():
    """The NCCL API version Braid implements, as (major, minor, patch)."""
    code = _braid.version()
    return (code // 10000, code // 100 % 100, code % 100)

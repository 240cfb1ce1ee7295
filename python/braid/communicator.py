"""braid.Communicator and braid.group(): the NCCL communicator API over numpy arrays and raw
pointers."""

import contextlib
import threading
import time

import numpy as np

from . import _braid
from .errors import BraidError, IN_PROGRESS, SUCCESS
from .stream import stream_argument

# Element types numpy has no name for without ml_dtypes: passed to the library by name, the
# array's bits reinterpreted (a uint16 array holding bfloat16 values with dtype="bfloat16").
_NAMED_ONLY = ("bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")

_group = threading.local()


def _group_state():
    if not hasattr(_group, "depth"):
        _group.depth = 0
        _group.keep = []
        _group.nonblocking = []
    return _group


@contextlib.contextmanager
def group():
    """ncclGroupStart/ncclGroupEnd: the calls inside are issued together when the block ends,
    which is how one thread drives several communicators (one per rank of ``init_all``) or posts
    sends and receives that must progress together. Groups nest. The arrays used inside are kept
    referenced until the group has run."""
    state = _group_state()
    _braid.group_start()
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        try:
            _braid.group_end()
        finally:
            if state.depth == 0:
                state.keep = []
                waiting, state.nonblocking = state.nonblocking, []
                for comm in waiting:
                    comm.wait()


def _dtype_argument(dtype, arrays):
    """None (the arrays' own type), a name or DataType for the library."""
    if dtype is None:
        for a in arrays:
            name = getattr(getattr(a, "dtype", None), "name", None)
            if name in _NAMED_ONLY:
                return name
        return None
    if isinstance(dtype, (str, _braid.DataType)):
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError("dtype must be a name, a braid.DataType or a numpy dtype, got %r"
                        % (dtype,)) from None


def _plain(array):
    """An ml_dtypes array (bfloat16, fp8) viewed as unsigned integers of its width: numpy cannot
    export those types through the buffer protocol; the dtype name travels separately."""
    name = getattr(getattr(array, "dtype", None), "name", None)
    if name in _NAMED_ONLY and isinstance(array, np.ndarray):
        return array.view(np.uint16 if array.itemsize == 2 else np.uint8)
    return array


def _element_type(array, dtype):
    return np.dtype(dtype) if dtype is not None and not isinstance(dtype, (str, _braid.DataType)) \
        else np.asarray(array).dtype


class Communicator:
    """One rank of a communicator (an ncclComm_t).

    ``Communicator(nranks, unique_id, rank)`` joins the ranks that share ``unique_id`` (from
    ``braid.get_unique_id()`` on one rank, passed to all; under ``braidrun`` every process's
    ``get_unique_id()`` returns the same id). ``Communicator.init_all(n)`` makes all n ranks in
    this process (threads, or one thread with ``braid.group()``).

    Collectives take numpy arrays (any object with the buffer protocol; C-contiguous, of an NCCL
    type), write their result into ``recv`` and return it; with ``recv=None`` they work in place
    where NCCL allows it, and allocate the result where the shape differs (all_gather, ...).
    ``stream=braid.Stream()`` queues the call instead of completing it before returning.
    Argument mistakes raise TypeError/ValueError naming the argument; library failures raise
    ``braid.BraidError``. A peer that dies makes the call raise (at once for a closed connection
    or exited process, at the latest after the communicator's ``timeout``).
    """

    def __init__(self, nranks, unique_id, rank, *, blocking=True, name=None, timeout=None):
        """``blocking=False`` returns at once while the ranks connect (``wait()`` or
        ``get_async_error()`` tell when it is ready). ``timeout`` (seconds) overrides
        BRAID_TIMEOUT_S for this communicator's operations."""
        self._comm = _braid.Comm.init_rank(int(nranks), bytes(unique_id), int(rank),
                                           blocking=blocking, name=name, timeout=timeout)

    @classmethod
    def _wrap(cls, comm):
        if comm is None:
            return None
        obj = cls.__new__(cls)
        obj._comm = comm
        return obj

    @classmethod
    def init_all(cls, n):
        """ncclCommInitAll: n communicators, ranks 0..n-1, all in this process."""
        return [cls._wrap(c) for c in _braid.Comm.init_all(int(n))]

    # --- the communicator ---------------------------------------------------------------------
    @property
    def rank(self):
        return self._comm.rank

    @property
    def size(self):
        return self._comm.size

    @property
    def blocking(self):
        return self._comm.blocking

    @property
    def handle(self):
        """The ncclComm_t as an integer, for C extensions that share this communicator."""
        return self._comm.handle

    @property
    def timeout(self):
        """Seconds an operation waits for a peer before failing (0: no limit)."""
        return self._comm.get_timeout()

    @timeout.setter
    def timeout(self, seconds):
        self._comm.set_timeout(float(seconds))

    def split(self, color, key, *, blocking=None):
        """ncclCommSplit (collective): ranks with the same color form a new communicator,
        ordered by key. ``color=braid.SPLIT_NOCOLOR`` leaves, and returns None."""
        return Communicator._wrap(self._comm.split(int(color), int(key), blocking))

    def shrink(self, exclude, *, abort_pending=False):
        """ncclCommShrink: a communicator of the ranks not in ``exclude`` (after a peer died)."""
        return Communicator._wrap(self._comm.shrink([int(r) for r in exclude], abort_pending))

    def destroy(self):
        """Frees the communicator (local; a second call does nothing)."""
        self._comm.destroy()

    def abort(self):
        """ncclCommAbort: from any thread; calls blocked on this communicator raise BraidError."""
        self._comm.abort()

    def finalize(self):
        self._comm.finalize()
        self._complete()

    def get_async_error(self):
        """ncclCommGetAsyncError: 0 (ready), braid.errors.IN_PROGRESS (non-blocking work still
        running) or the failure's code (``wait()`` raises it with its text)."""
        return self._comm.async_error()[0]

    def wait(self, timeout=None):
        """Waits until the non-blocking work has finished; raises BraidError if it failed, or
        TimeoutError after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            code, text = self._comm.async_error()
            if code == SUCCESS:
                return
            if code != IN_PROGRESS:
                raise BraidError(code, text)
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the communicator's non-blocking work did not finish within "
                                   "%s s" % timeout)
            time.sleep(0.0005)

    def barrier(self):
        """braidBarrier: returns once every rank has called it."""
        self._comm.barrier()

    def dump_flight_recorder(self):
        """Writes the last operations and the last sequence number heard from each peer to the
        library's log (docs/diagnosis.md)."""
        self._comm.dump_flight_recorder()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # After an error a peer may be stuck waiting for this rank: abort rather than destroy.
        if exc_type is None:
            self.destroy()
        else:
            self.abort()
        return False

    def __repr__(self):
        if not self._comm.alive:
            return "<braid.Communicator (destroyed)>"
        return "<braid.Communicator rank %d of %d>" % (self.rank, self.size)

    # --- plumbing shared by the collectives ---------------------------------------------------
    def _issue(self, method, arrays, stream, *args, **kwargs):
        state = _group_state()
        handle = stream_argument(stream, arrays)
        getattr(self._comm, method)(*(_plain(a) for a in args), stream=handle, **kwargs)
        if state.depth > 0:
            state.keep.extend(a for a in arrays if a is not None)
            if not self.blocking:
                state.nonblocking.append(self)
        else:
            self._complete()

    def _complete(self):
        # A non-blocking communicator returns ncclInProgress; the Python call still completes
        # before returning (the arrays are the caller's), but abort() from another thread can
        # end it, which is what non-blocking communicators are for.
        if not self.blocking:
            self.wait()

    # --- collectives on arrays ----------------------------------------------------------------
    def all_reduce(self, send, recv=None, op="sum", *, dtype=None, stream=None):
        """recv[i] = op over ranks of send[i]; in place when recv is None."""
        recv = send if recv is None else recv
        d = _dtype_argument(dtype, (send, recv))
        self._issue("all_reduce", (send, recv), stream, send, recv, op, dtype=d)
        return recv

    def broadcast(self, send, recv=None, *, root=0, dtype=None, stream=None):
        """Root's send is copied into recv on every rank; in place when recv is None (send is
        then the buffer on every rank). Non-root ranks may pass send=None with a recv."""
        recv = send if recv is None else recv
        d = _dtype_argument(dtype, (send, recv))
        self._issue("broadcast", (send, recv), stream, send, recv, int(root), dtype=d)
        return recv

    def reduce(self, send, recv=None, op="sum", *, root=0, dtype=None, stream=None):
        """The reduction over ranks lands in root's recv (in place in send when recv is None);
        other ranks' recv is not used. Returns recv (on the root) or None."""
        if recv is None and self.rank == root:
            recv = send
        d = _dtype_argument(dtype, (send, recv))
        self._issue("reduce", (send, recv), stream, send, recv, op, int(root), dtype=d)
        return recv if self.rank == root else None

    def all_gather(self, send, recv=None, *, dtype=None, stream=None):
        """Every rank's send, in rank order, in recv (allocated with shape (size,) + send.shape
        when None)."""
        if recv is None:
            a = np.asarray(send)
            recv = np.empty((self.size,) + a.shape, dtype=_element_type(send, dtype))
        d = _dtype_argument(dtype, (send, recv))
        self._issue("all_gather", (send, recv), stream, send, recv, dtype=d)
        return recv

    def reduce_scatter(self, send, recv=None, op="sum", *, dtype=None, stream=None):
        """Block r (send.size / size elements) of the reduction over ranks lands on rank r."""
        if recv is None:
            a = np.asarray(send)
            if a.size % self.size:
                raise ValueError("reduce_scatter: send has %d elements, not a multiple of size=%d"
                                 % (a.size, self.size))
            recv = np.empty(a.size // self.size, dtype=_element_type(send, dtype))
        d = _dtype_argument(dtype, (send, recv))
        self._issue("reduce_scatter", (send, recv), stream, send, recv, op, dtype=d)
        return recv

    def alltoall(self, send, recv=None, *, dtype=None, stream=None):
        """Block j of send goes to rank j; block i of recv comes from rank i."""
        if recv is None:
            a = np.asarray(send)
            recv = np.empty(a.shape, dtype=_element_type(send, dtype))
        d = _dtype_argument(dtype, (send, recv))
        self._issue("alltoall", (send, recv), stream, send, recv, dtype=d)
        return recv

    def gather(self, send, recv=None, *, root=0, dtype=None, stream=None):
        """Every rank's send, in rank order, in root's recv (allocated there when None).
        Returns recv on the root, None elsewhere."""
        is_root = self.rank == root
        if recv is None and is_root:
            a = np.asarray(send)
            recv = np.empty((self.size,) + a.shape, dtype=_element_type(send, dtype))
        d = _dtype_argument(dtype, (send, recv))
        self._issue("gather", (send, recv), stream, send, recv if is_root else None, int(root),
                    dtype=d)
        return recv if is_root else None

    def scatter(self, send, recv, *, root=0, dtype=None, stream=None):
        """Block r of root's send (recv.size elements each) lands in rank r's recv; send is only
        read on the root (None elsewhere)."""
        d = _dtype_argument(dtype, (send, recv))
        self._issue("scatter", (send, recv), stream, send if self.rank == root else None, recv,
                    int(root), dtype=d)
        return recv

    def send(self, array, peer, *, dtype=None, stream=None):
        """Sends array to rank peer, which posts a matching recv (put both in a group when they
        must progress together)."""
        d = _dtype_argument(dtype, (array,))
        self._issue("send", (array,), stream, array, int(peer), dtype=d)

    def recv(self, array, peer, *, dtype=None, stream=None):
        """Receives into array from rank peer; returns array."""
        d = _dtype_argument(dtype, (array,))
        self._issue("recv", (array,), stream, array, int(peer), dtype=d)
        return array

    # --- collectives on raw addresses (framework tensors' data pointers) ----------------------
    # The caller guarantees the memory: count elements of dtype at each address, alive and
    # untouched until the call (or its stream) completes.
    def all_reduce_ptr(self, sendptr, recvptr, count, dtype, op="sum", stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("all_reduce_ptr", (), stream, sendptr, recvptr, count, d, op)

    def broadcast_ptr(self, sendptr, recvptr, count, dtype, root=0, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("broadcast_ptr", (), stream, sendptr, recvptr, count, d, root)

    def reduce_ptr(self, sendptr, recvptr, count, dtype, op="sum", root=0, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("reduce_ptr", (), stream, sendptr, recvptr, count, d, op, root)

    def all_gather_ptr(self, sendptr, recvptr, sendcount, dtype, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("all_gather_ptr", (), stream, sendptr, recvptr, sendcount, d)

    def reduce_scatter_ptr(self, sendptr, recvptr, recvcount, dtype, op="sum", stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("reduce_scatter_ptr", (), stream, sendptr, recvptr, recvcount, d, op)

    def alltoall_ptr(self, sendptr, recvptr, count, dtype, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("alltoall_ptr", (), stream, sendptr, recvptr, count, d)

    def gather_ptr(self, sendptr, recvptr, count, dtype, root=0, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("gather_ptr", (), stream, sendptr, recvptr, count, d, root)

    def scatter_ptr(self, sendptr, recvptr, count, dtype, root=0, stream=None):
        d = _dtype_argument(dtype, ())
        self._issue("scatter_ptr", (), stream, sendptr, recvptr, count, d, root)

    def send_ptr(self, ptr, count, dtype, peer, stream=None):
        self._issue("send_ptr", (), stream, ptr, count, _dtype_argument(dtype, ()), peer)

    def recv_ptr(self, ptr, count, dtype, peer, stream=None):
        self._issue("recv_ptr", (), stream, ptr, count, _dtype_argument(dtype, ()), peer)

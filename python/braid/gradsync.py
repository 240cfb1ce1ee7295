"""braid.GradSync: DDP-style bucketed gradient averaging for a Python training loop
(include/braid/gradsync.h, docs/gradsync.md)."""

import contextlib

import numpy as np

from . import _braid


class GradSync:
    """Averages gradients over the ranks of ``comm`` in buckets, each all-reduced on a host
    stream as soon as its gradients are ready, so communication overlaps the rest of backward.

    A step: write each gradient array, ``mark_ready(index)`` (in backward order), then
    ``finish()``; afterwards every gradient holds the average over ranks of its sum since the
    last synced step. Register with ``add_gradient`` (in model order), then ``finalize()`` once,
    on every rank. Between ``mark_ready`` and ``finish`` the arrays must not be written and the
    communicator must not be used by other calls. Settings must be equal on every rank.

    ``wire="float16"``/``"bfloat16"`` sends fp32 gradients in 16 bits (DDP's compress hooks);
    ``averaging="premulsum"`` multiplies by 1/size before summing instead of ncclAvg.
    """

    def __init__(self, comm, *, bucket_cap_bytes=25 << 20, first_bucket_cap_bytes=1 << 20,
                 gradients_as_bucket_views=False, rebuild_buckets_after_first_step=True,
                 wire="native", averaging="avg"):
        self.comm = comm
        self._dtypes = []
        self._shapes = []
        self._sync = _braid.GradSync(comm._comm, int(bucket_cap_bytes),
                                     int(first_bucket_cap_bytes), bool(gradients_as_bucket_views),
                                     bool(rebuild_buckets_after_first_step), wire, averaging)

    def add_gradient(self, gradient, name=None, *, dtype=None):
        """Registers a gradient array (float16/bfloat16/float32/float64, C-contiguous, writable;
        kept referenced by this object). Returns its index."""
        name = name if name is not None else "grad%d" % len(self._dtypes)
        d = dtype if dtype is None or isinstance(dtype, str) else np.dtype(dtype).name
        index = self._sync.add_gradient(gradient, name, d)
        a = np.asarray(gradient)
        self._dtypes.append(a.dtype)
        self._shapes.append(a.shape)
        return index

    def add_gradient_ptr(self, ptr, count, dtype, name=None):
        """Registers a gradient by address (a framework tensor's data pointer)."""
        name = name if name is not None else "grad%d" % len(self._dtypes)
        d = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        index = self._sync.add_gradient_ptr(int(ptr), int(count), d, name)
        self._dtypes.append(np.dtype(d) if d != "bfloat16" else np.dtype(np.uint16))
        self._shapes.append((int(count),))
        return index

    def finalize(self):
        """Builds the buckets and checks, collectively, that every rank registered the same."""
        self._sync.finalize()

    def mark_ready(self, index):
        self._sync.mark_ready(int(index))

    def finish(self):
        """Waits for every bucket's allreduce (raises BraidError if one failed)."""
        self._sync.finish()

    def gradient(self, index):
        """A numpy view of the memory gradient ``index`` lives in now (with
        ``gradients_as_bucket_views=True`` backward must write there; the address can change
        after the first synced step, so ask again each step)."""
        view = self._sync.gradient_view(int(index))
        return np.frombuffer(view, dtype=self._dtypes[index]).reshape(self._shapes[index])

    @property
    def sync_enabled(self):
        return self._sync.sync_enabled

    @sync_enabled.setter
    def sync_enabled(self, enabled):
        self._sync.sync_enabled = bool(enabled)

    @contextlib.contextmanager
    def no_sync(self):
        """Steps inside accumulate gradients locally; the next synced step reduces the sum."""
        was = self._sync.sync_enabled
        self._sync.sync_enabled = False
        try:
            yield
        finally:
            self._sync.sync_enabled = was

    def broadcast_parameters(self, params, root=0):
        """Copies root's parameter arrays to every rank (collective)."""
        self._sync.broadcast_parameters(list(params), int(root))

    def verify_parameters_equal(self, params, names=None):
        """Raises BraidError naming the first parameter that differs between ranks."""
        self._sync.verify_parameters_equal(list(params), list(names or []))

    @property
    def last_step(self):
        """Statistics of the last finish(): bytes_reduced, wire_bytes, buckets,
        finish_wait_seconds, synced."""
        return self._sync.last_step

    @property
    def bucket_layout(self):
        """Gradient indices of each bucket, in launch order."""
        return self._sync.bucket_layout

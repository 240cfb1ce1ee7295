"""braid.Stream: a host stream (braidStream_t), Braid's CPU counterpart of a CUDA stream."""

from . import _braid


class Stream:
    """An in-order queue with its own thread. A collective given ``stream=s`` checks its
    arguments, queues the work and returns at once; ``synchronize()`` waits for it.

    The arrays handed to queued calls are kept referenced here until the work has run (after
    ``synchronize()``, a ``query()`` that returns True, or ``destroy()``), so they cannot be freed
    under the stream's thread. They must not be modified in the meantime. A failure is sticky:
    later work on the stream is skipped and ``synchronize``/``query`` raise ``BraidError``.
    """

    def __init__(self):
        self._stream = _braid.Stream()
        self._pending = []

    @property
    def handle(self):
        """The braidStream_t as an integer (the ``stream`` argument of the ``*_ptr`` calls)."""
        return self._stream.handle

    def _keep(self, objects):
        self._pending.extend(o for o in objects if o is not None)

    def synchronize(self):
        """Waits until everything queued has run; raises the stream's error, if any."""
        try:
            self._stream.synchronize()
        finally:
            self._pending.clear()

    def query(self):
        """True when everything queued has run, False while work is pending."""
        done = self._stream.query()
        if done:
            self._pending.clear()
        return done

    def destroy(self):
        """Waits for the queued work and frees the stream; raises its error, if any."""
        try:
            self._stream.destroy()
        finally:
            self._pending.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False


def stream_argument(stream, objects):
    """The integer handle for a ``stream=`` argument (None: the NULL stream, the call completes
    before it returns), keeping ``objects`` referenced by the stream until its work has run."""
    if stream is None or stream == 0:
        return 0
    if isinstance(stream, Stream):
        stream._keep(objects)
        return stream.handle
    if isinstance(stream, int):
        return stream  # a raw braidStream_t handle: the caller keeps its buffers alive
    raise TypeError("stream must be a braid.Stream, an integer handle or None, got %s"
                    % type(stream).__name__)

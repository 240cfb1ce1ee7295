"""BraidError: a failure reported by the library (any ncclResult_t other than success)."""

# ncclResult_t values (include/nccl.h).
SUCCESS = 0
UNHANDLED_CUDA_ERROR = 1
SYSTEM_ERROR = 2
INTERNAL_ERROR = 3
INVALID_ARGUMENT = 4
INVALID_USAGE = 5
REMOTE_ERROR = 6
IN_PROGRESS = 7

RESULT_NAMES = {
    SUCCESS: "ncclSuccess",
    UNHANDLED_CUDA_ERROR: "ncclUnhandledCudaError",
    SYSTEM_ERROR: "ncclSystemError",
    INTERNAL_ERROR: "ncclInternalError",
    INVALID_ARGUMENT: "ncclInvalidArgument",
    INVALID_USAGE: "ncclInvalidUsage",
    REMOTE_ERROR: "ncclRemoteError",
    IN_PROGRESS: "ncclInProgress",
}


class BraidError(RuntimeError):
    """A library call failed.

    ``code`` is the ncclResult_t value (``braid.errors.REMOTE_ERROR`` for a dead or silent peer,
    ``INVALID_ARGUMENT``/``INVALID_USAGE`` for a refused call, ...), ``code_name`` its NCCL name
    and ``text`` the library's explanation (ncclGetLastError on the failing thread), which names
    the call, the rank and, for a peer failure, the peer.
    """

    def __init__(self, code, text):
        self.code = int(code)
        self.code_name = RESULT_NAMES.get(self.code, "ncclResult(%d)" % self.code)
        self.text = text
        super().__init__("%s [%s]" % (text, self.code_name))

    def __reduce__(self):
        # Picklable, so an error raised in a worker process reaches its parent intact.
        return (type(self), (self.code, self.text))

"""Braid as a torch.distributed backend.

``import braid.torch`` registers the backend "braid"; then

    torch.distributed.init_process_group("braid", rank=..., world_size=...)

runs every collective of the group (and DistributedDataParallel's gradient
all-reduce) through Braid on CPU tensors. ``braid.torch.DistributedDataParallel``
(or DDP built inside ``braid.torch.shared_memory()``) puts DDP's gradient buckets
in shared memory, so their all-reduces take Braid's one-sided ZeroCopy algorithm; it also
makes the gradients views of the buckets and averages inside the all-reduce.
See docs/pytorch.md.
"""

import contextlib
import os
import warnings

import torch
import torch.distributed as dist

try:
    from braid import _braid_torch
except ImportError as _missing:
    import glob as _glob

    _built = _glob.glob(os.path.join(os.path.dirname(__file__), "_braid_torch*.so"))
    raise ImportError(
        ("braid.torch: the PyTorch backend braid._braid_torch does not load with torch "
         f"{torch.__version__} ({_missing}); it was built against another torch: reinstall "
         "braid (pip install ./python) in this environment"
         if _built else
         "braid.torch: this braid was installed without its PyTorch backend "
         "(braid._braid_torch): pip builds it against the torch of the environment it installs "
         "into, torch 1.13 to 2.11; install torch first, then reinstall braid "
         "(pip install ./python, or the wheel built for this torch). The in-tree build makes it "
         "for the torch that tools/setup-frameworks installs.")) from _missing

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


def _average_hook(group, bucket):
    """DDP comm hook: the bucket all-reduced with ReduceOp.AVG in place, so the division by the
    world size happens inside Braid's reduction instead of a pass of its own over the bucket."""
    buffer = bucket.buffer()
    if not buffer.is_floating_point():
        # (complex gradients) torch's default: divide, then sum.
        buffer.div_(group.size())
        op = dist.ReduceOp.SUM
    else:
        op = dist.ReduceOp.AVG
    future = dist.all_reduce(buffer, op=op, group=group, async_op=True).get_future()
    # value() raises the all-reduce's error, if any, into the future DDP waits on.
    return future.then(lambda done: done.value()[0])


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """torch's DistributedDataParallel with its gradient buckets in shared memory, gradients that
    are views of the buckets, and averaging inside the all-reduce.

    - The buckets are allocated while DDP is built and rebuilt once, in the forward pass after
      the first backward: this class opens shared_memory() around __init__ and around its first
      two forward() calls with gradients enabled, and nowhere else.
    - ``gradient_as_bucket_view`` defaults to True (torch's option; pass False for torch's
      default): each parameter's .grad is a view of its bucket, so backward writes the gradients
      where the all-reduce reads them, and nothing is copied into the buckets or back.
    - ``average_in_allreduce`` (default True): when the process group is Braid's and no comm
      hook was registered by the first forward, a hook all-reduces each bucket with
      ReduceOp.AVG instead of DDP's division pass followed by a sum.

    Everything else is torch's DDP."""

    def __init__(self, *args, average_in_allreduce=True, **kwargs):
        kwargs.setdefault("gradient_as_bucket_view", True)
        with shared_memory():
            super().__init__(*args, **kwargs)
        self._braid_shared_forwards = 2
        self._braid_average_pending = average_in_allreduce

    def register_comm_hook(self, state, hook):
        self._braid_average_pending = False
        super().register_comm_hook(state, hook)

    def _register_builtin_comm_hook(self, comm_hook_type):
        self._braid_average_pending = False
        super()._register_builtin_comm_hook(comm_hook_type)

    def _install_average_hook(self):
        self._braid_average_pending = False
        group = self.process_group
        if dist.get_backend(group) == BACKEND_NAME:
            super().register_comm_hook(group, _average_hook)

    def forward(self, *inputs, **kwargs):
        if self._braid_average_pending and torch.is_grad_enabled():
            self._install_average_hook()
        if self._braid_shared_forwards > 0 and torch.is_grad_enabled():
            self._braid_shared_forwards -= 1
            with shared_memory():
                return super().forward(*inputs, **kwargs)
        return super().forward(*inputs, **kwargs)


def backend(group=None):
    """The ProcessGroupBraid behind `group` (default: the default group): the group itself in
    PyTorch 1.x, its CPU backend in 2.x. For Braid's own methods (comm_timeout_seconds)."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    if isinstance(group, ProcessGroupBraid):
        return group
    found = group._get_backend(torch.device("cpu"))
    if not isinstance(found, ProcessGroupBraid):
        raise ValueError(f"the group's CPU backend is {type(found).__name__}, not Braid's")
    return found


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier for a Braid group, which torch's own function refuses
    (it accepts gloo groups only, in PyTorch 1.13 and 2.x alike). Rank 0 waits up to `timeout`
    (a timedelta; default: the group's timeout) for every other rank and raises
    RuntimeError("[Rank 0]: Rank R failed to pass monitoredBarrier in T ms") naming the first
    rank that did not arrive, or all of them with wait_all_ranks=True, as gloo does. The other
    ranks wait for rank 0's release. Any other group goes to torch's function."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    if dist.get_backend(group) != BACKEND_NAME:
        return dist.monitored_barrier(group=group, timeout=timeout, wait_all_ranks=wait_all_ranks)
    if timeout is None:
        return group.monitored_barrier(wait_all_ranks=wait_all_ranks)
    return group.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _first_host(nodelist):
    """The first host of a Slurm node list ("n[01-04,07],gpu2" -> "n01", "a,b[1-2]" -> "a")."""
    prefix, bracket, ranges = nodelist.partition("[")
    if "," in prefix or not bracket:
        return prefix.split(",")[0]
    return prefix + ranges.replace("-", ",").split(",")[0].rstrip("]")


def launcher_environment(environ=None):
    """torch's env:// variables from the launcher that started this process, where torchrun's
    are not set: mpirun (OMPI_COMM_WORLD_*, or PMI_RANK/PMI_SIZE) and Slurm (SLURM_PROCID,
    SLURM_NTASKS, SLURM_LOCALID, ...; MASTER_ADDR the job's first node, MASTER_PORT 20000 +
    the job id modulo 20000). What a launcher sets is never overridden; returns the names set."""
    env = os.environ if environ is None else environ
    if "RANK" in env:
        return []
    sources = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
    ]
    wanted = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
    set_names = []
    for names in sources:
        if names[0] in env and names[1] in env:
            for want, have in zip(wanted, names):
                if want not in env and have in env:
                    env[want] = env[have].split("(")[0]  # (SLURM_NTASKS_PER_NODE: "2(x3)")
                    set_names.append(want)
            break
    nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
    if set_names and "MASTER_ADDR" not in env and nodes:
        env["MASTER_ADDR"] = _first_host(nodes)
        set_names.append("MASTER_ADDR")
    if set_names and "MASTER_PORT" not in env and "SLURM_JOB_ID" in env:
        env["MASTER_PORT"] = str(20000 + int(env["SLURM_JOB_ID"]) % 20000)
        set_names.append("MASTER_PORT")
    return set_names


def _torch_major():
    return int(torch.__version__.split(".")[0])


def _register():
    # Importing twice (or under another name) must not register twice: torch asserts.
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    if _torch_major() >= 2:
        # PyTorch 2.x: a process group holds one backend per device type; Braid's takes CPU
        # tensors (CUDA users keep backend="nccl" and may preload Braid's libnccl.so.2).
        dist.Backend.register_backend(BACKEND_NAME, create_process_group, devices=["cpu"])
    else:
        dist.Backend.register_backend(BACKEND_NAME, create_process_group)


_register()
launcher_environment()

"""PyTorch's own ProcessGroupNCCL on Braid: ranks as processes on the one GPU (cuda:0), which
NVIDIA's NCCL refuses ("Duplicate GPU detected") and Braid allows. Run with Braid's libnccl.so.2
preloaded (tools/gpu-check does): LD_PRELOAD=<braid>/lib/libnccl.so.2.

Checks, on every rank: the ncclAllReduce that the process resolves comes from Braid (the library
that defines it also exports braidBarrier, an entry point only Braid has; /proc/self/maps lists
NVIDIA's libnccl.so.2 too, which torch loads by name and whose symbols the preload shadows); all_reduce of float32 and bfloat16 exact
(sums of small integers); one DDP step's gradients equal the mean of the ranks' own gradients.
Prints "torch-on-braid: OK ..." and exits 0, or names what failed and exits 1.
"""
import argparse
import ctypes
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def nccl_provider():
    """(path, is_braid): the library whose ncclAllReduce this process calls, and whether that
    library exports braidBarrier."""
    scope = ctypes.CDLL(None)  # the global scope: the executable, the preloads, then the rest
    try:
        addr = ctypes.cast(scope.ncclAllReduce, ctypes.c_void_p).value
    except AttributeError:
        return "(no ncclAllReduce in the global scope)", False
    info = _DlInfo()
    dladdr = scope.dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    if not dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return "(dladdr found no library)", False
    path = info.dli_fname.decode()
    lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    return os.path.realpath(path), hasattr(lib, "braidBarrier")


def rank_main(rank, world, port, failures):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda:0"))
    problems = []
    lib, is_braid = nccl_provider()
    if not is_braid:
        problems.append(f"ncclAllReduce comes from {lib}, which has no braidBarrier: not Braid")
    elif rank == 0:
        print(f"torch-on-braid: ncclAllReduce from {lib} (exports braidBarrier)", flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        for count in (1, 1031, 1 << 20):
            x = (torch.arange(count, device="cuda:0") % 7 + rank + 1).to(dtype)
            dist.all_reduce(x)
            want = (torch.arange(count, device="cuda:0") % 7) * world + world * (world + 1) // 2
            if not torch.equal(x.float(), want.float()):
                bad = (x.float() != want.float()).nonzero()[0].item()
                problems.append(f"all_reduce {dtype} count {count}: element {bad} is "
                                f"{x[bad].item()}, expected {want[bad].item()}")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 32)).cuda(0)
    local = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 32)).cuda(0)
    local.load_state_dict(model.state_dict())
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    torch.manual_seed(100 + rank)
    data = torch.randn(16, 64, device="cuda:0")
    ddp(data).square().sum().backward()
    local(data).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), local.parameters()):
        grads = [torch.empty_like(q.grad) for _ in range(world)]
        dist.all_gather(grads, q.grad)
        mean = torch.stack(grads).mean(0)
        if not torch.allclose(p.grad, mean, rtol=1e-5, atol=1e-6):
            err = (p.grad - mean).abs().max().item()
            problems.append(f"DDP gradient of {name} differs from the ranks' mean by {err}")
    torch.cuda.synchronize()
    dist.destroy_process_group()
    if problems:
        failures.put((rank, problems))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    failures = ctx.Queue()
    mp.spawn(rank_main, args=(args.ranks, port, failures), nprocs=args.ranks, join=True)
    bad = []
    while not failures.empty():
        bad.append(failures.get())
    if bad:
        for rank, problems in bad:
            for p in problems:
                print(f"torch-on-braid: rank {rank}: {p}")
        return 1
    print(f"torch-on-braid: OK: {args.ranks} ranks on cuda:0, torch {torch.__version__}: "
          "all_reduce float32/bfloat16 exact, one DDP step's gradients equal the ranks' mean")
    return 0


if __name__ == "__main__":
    sys.exit(main())

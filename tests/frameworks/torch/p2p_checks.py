"""Point-to-point exchanges in every posting order, checked element by element.

Each check takes `ops`: isend(tensor, peer, tag) and irecv(tensor, peer, tag) returning a Work,
and batch(list of (is_send, tensor, peer, tag)) returning Works, so the same checks run over
torch.distributed's functions (ranks as processes) and over process-group objects (ranks as
threads of one process). Sizes run from 0 elements to 64 MiB (beyond any FIFO's capacity, where
an exchange that needs its send to finish before its receive is posted deadlocks).
"""

import torch

SIZES = (0, 1, 7, 1031, 1572869, 16 * 1024 * 1024)  # float32: up to 6 MiB (prime) and 64 MiB


# The values repeat every PERIOD elements; 4093 is prime, so it divides no power of two and a
# block misplaced by a power-of-two offset still changes them.
PERIOD = 4093


def message(sender, receiver, n, salt=0):
    """What `sender` sends `receiver`: exact in float32 and different for every pair and salt;
    element i is (31 i + 1009 sender + 7 receiver + 131 salt) mod PERIOD. Built from one period
    (computed element by element, a 64 MiB message took about a second, paid by every send and
    every check). Each call builds a new tensor: a check never reads the buffer that was sent."""
    i = torch.arange(min(n, PERIOD), dtype=torch.int64)
    period = ((i * 31 + sender * 1009 + receiver * 7 + salt * 131) % PERIOD).to(torch.float32)
    return period.repeat((n + PERIOD - 1) // PERIOD)[:n] if n > PERIOD else period


def poison(n):
    return torch.full((n,), -1.0, dtype=torch.float32)


def expect(got, sender, receiver, n, salt, what):
    want = message(sender, receiver, n, salt)
    if not torch.equal(got, want):
        bad = (got != want).nonzero()
        first = int(bad[0]) if len(bad) else -1
        raise AssertionError(f"{what}: {len(bad)} of {n} elements wrong, first at {first} "
                             f"(got {got[first].item() if first >= 0 else None}, "
                             f"want {want[first].item() if first >= 0 else None})")


def _exchange(ops, rank, world, n, order):
    """Every rank exchanges a message with each other rank; `order` says how it posts them."""
    peers = [p for p in range(world) if p != rank]
    got = {p: poison(n) for p in peers}
    sends = [(True, message(rank, p, n), p, 0) for p in peers]
    recvs = [(False, got[p], p, 0) for p in peers]
    if order == "recv first":
        posted = recvs + sends
    elif order == "send first":
        posted = sends + recvs
    elif order == "by parity":  # even ranks send first, odd ranks receive first
        posted = sends + recvs if rank % 2 == 0 else recvs + sends
    else:
        posted = None
    if posted is not None:
        works = [(ops.isend if s else ops.irecv)(t, p, tag) for s, t, p, tag in posted]
    else:  # one batch, receives first
        works = ops.batch(recvs + sends)
    for w in works:
        w.wait()
    for p in peers:
        expect(got[p], p, rank, n, 0, f"{order}, n={n}, from rank {p}")


def check_every_order(ops, rank, world):
    for n in SIZES:
        for order in ("recv first", "send first", "by parity", "batch"):
            _exchange(ops, rank, world, n, order)


def check_many_in_flight(ops, rank, world):
    """Three messages each way with one peer, all receives posted first: they match in order."""
    peer = rank ^ 1
    if peer >= world:
        return
    n = 300007
    got = [poison(n) for _ in range(3)]
    works = [ops.irecv(g, peer, 0) for g in got]
    works += [ops.isend(message(rank, peer, n, salt), peer, 0) for salt in range(3)]
    for w in works:
        w.wait()
    for salt in range(3):
        expect(got[salt], peer, rank, n, salt, f"message {salt} of 3 in flight")


def check_tags(ops, rank, world):
    """Rank 0 sends under tags 1 then 2; rank 1 receives tag 2 first: tags match, not order."""
    if world < 2 or rank > 1:
        return
    n = 2 * 1024 * 1024  # 8 MiB: more than a FIFO holds
    if rank == 0:
        works = [ops.isend(message(0, 1, n, tag), 1, tag) for tag in (1, 2)]
        for w in works:
            w.wait()
    else:
        two, one = poison(n), poison(n)
        ops.irecv(two, 0, 2).wait()  # tag 1 is still unreceived, and its send still posted
        ops.irecv(one, 0, 1).wait()
        expect(two, 0, 1, n, 2, "tag 2 received first")
        expect(one, 0, 1, n, 1, "tag 1 received second")


def run_all(ops, rank, world):
    check_every_order(ops, rank, world)
    check_many_in_flight(ops, rank, world)
    check_tags(ops, rank, world)

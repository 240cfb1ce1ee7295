"""Host streams (queued collectives, keep-alive of the arrays, query/synchronize) and GradSync
(averaged gradients, accumulation under no_sync, statistics, parameter checks) at 1-3 ranks."""

import contextlib
import gc

import numpy as np
import pytest

import braid
from conftest import run_threads


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_collectives_queued_on_a_stream(nranks):
    comms = braid.Communicator.init_all(nranks)
    count = 10_007

    def body(comm):
        r = comm.rank
        with braid.Stream() as stream:
            # Temporaries: only the stream's references keep them alive until synchronize.
            out = comm.all_reduce(np.full(count, r + 1.0), np.empty(count), stream=stream)
            gathered = comm.all_gather(np.arange(3, dtype=np.int64) + 10 * r, stream=stream)
            gc.collect()
            stream.synchronize()
            assert stream.query() is True
        return out, gathered

    results = run_threads(comms, body)
    for out, gathered in results:
        np.testing.assert_array_equal(out, np.full(count, nranks * (nranks + 1) / 2))
        expected = np.stack([np.arange(3) + 10 * r for r in range(nranks)])
        np.testing.assert_array_equal(gathered, expected)
    for c in comms:
        c.destroy()


def test_stream_pointer_calls():
    comms = braid.Communicator.init_all(2)
    bufs = [np.full(5, r + 1, np.int32) for r in range(2)]
    streams = [braid.Stream(), braid.Stream()]
    with braid.group():
        for c, b, s in zip(comms, bufs, streams):
            c.all_reduce_ptr(b.ctypes.data, b.ctypes.data, b.size, np.int32, "prod", stream=s)
    for s in streams:
        s.synchronize()
        s.destroy()
    for b in bufs:
        np.testing.assert_array_equal(b, np.full(5, 2, np.int32))


GRAD_SHAPES = [(0,), (1,), (13,), (31, 7), (1000,)]
GRAD_TYPES = [np.float32, np.float64, np.float32, np.float64, np.float32]


def rank_gradient(rank, step, index, shape):
    rng = np.random.default_rng([rank, step, index])
    return rng.integers(-8, 9, shape).astype(np.float64)


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_gradsync_averages_and_accumulates(nranks):
    comms = braid.Communicator.init_all(nranks)

    def body(comm):
        r = comm.rank
        grads = [np.zeros(s, t) for s, t in zip(GRAD_SHAPES, GRAD_TYPES)]
        sync = braid.GradSync(comm, bucket_cap_bytes=4096, first_bucket_cap_bytes=512)
        for i, g in enumerate(grads):
            assert sync.add_gradient(g, "layer%d" % i) == i
        sync.finalize()
        results = []
        # Step 0: synced. Steps 1-2: accumulated under no_sync, reduced by step 3.
        for step in range(4):
            ctx = sync.no_sync() if step in (1, 2) else contextlib.nullcontext()
            with ctx:
                for i in reversed(range(len(grads))):
                    # Each micro-batch writes a fresh gradient; GradSync keeps the sum.
                    grads[i][...] = rank_gradient(r, step, i, GRAD_SHAPES[i])
                    sync.mark_ready(i)
                sync.finish()
            results.append(([g.copy() for g in grads], dict(sync.last_step)))
        return results, sync.bucket_layout

    per_rank = run_threads(comms, body)
    total_bytes = sum(int(np.prod(s)) * np.dtype(t).itemsize
                      for s, t in zip(GRAD_SHAPES, GRAD_TYPES))
    for results, layout in per_rank:
        assert sorted(sum(layout, [])) == list(range(len(GRAD_SHAPES)))
        for step in (0, 3):
            grads, stats = results[step]
            steps = [0] if step == 0 else [1, 2, 3]
            for i, g in enumerate(grads):
                # NCCL's average of floating types: each rank's (accumulated, exact) gradient
                # times dtype(1/n), rounded, then summed: float64 reference of the rounded
                # products, within the sum's rounding bound.
                dt = GRAD_TYPES[i]
                inv = dt(1.0 / nranks)
                prods = [(sum(rank_gradient(r, s, i, GRAD_SHAPES[i]) for s in steps)
                          .astype(dt) * inv).astype(np.float64) for r in range(nranks)]
                ref = sum(prods)
                bound = nranks * np.finfo(dt).eps * sum(np.abs(p) for p in prods)
                worst = np.abs(g - ref) - bound
                assert g.shape == ref.shape and np.all(worst <= 0), \
                    "step %d gradient %d: element %d is %r, reference %r (bound %r)" % (
                        step, i, int(np.argmax(worst)), g.flat[np.argmax(worst)],
                        ref.flat[np.argmax(worst)], bound.flat[np.argmax(worst)])
            assert stats["synced"] and stats["bytes_reduced"] == total_bytes, stats
        assert results[1][1]["synced"] is False
    for c in comms:
        c.destroy()


def test_gradsync_parameters_broadcast_and_verified():
    comms = braid.Communicator.init_all(3)

    def body(comm):
        params = [np.full(7, comm.rank, np.float32), np.full(3, 10.0 * comm.rank)]
        sync = braid.GradSync(comm)
        sync.add_gradient(np.zeros(1, np.float32))
        sync.finalize()
        sync.broadcast_parameters(params, root=2)
        sync.verify_parameters_equal(params, ["weight", "bias"])
        if comm.rank == 1:
            params[1][2] += 1
        try:
            sync.verify_parameters_equal(params, ["weight", "bias"])
        except braid.BraidError as e:
            return params, e.text
        return params, None

    for params, error in run_threads(comms, body):
        assert error is not None and "bias" in error, error
    for c in comms:
        c.abort()


def test_gradsync_bad_input():
    (comm,) = braid.Communicator.init_all(1)
    with pytest.raises(ValueError, match=r"wire='fp8' is not a wire format"):
        braid.GradSync(comm, wire="fp8")
    sync = braid.GradSync(comm)
    with pytest.raises(braid.BraidError, match=r"int32"):
        sync.add_gradient(np.zeros(4, np.int32))
    sync2 = braid.GradSync(comm)
    sync2.add_gradient(np.zeros(4, np.float32))
    sync2.finalize()
    with pytest.raises(braid.BraidError):
        sync2.mark_ready(5)
    comm.destroy()


def test_gradsync_gradients_as_bucket_views():
    comms = braid.Communicator.init_all(2)

    def body(comm):
        sync = braid.GradSync(comm, gradients_as_bucket_views=True)
        sync.add_gradient_ptr(0, 5, "float32", "w")
        sync.add_gradient_ptr(0, 3, np.float64, "b")
        sync.finalize()
        out = []
        for step in range(2):  # buckets may move after the first step: ask again each step
            for i in (1, 0):
                g = sync.gradient(i)
                g[...] = np.arange(g.size) + 10 * comm.rank + step
                sync.mark_ready(i)
            sync.finish()
            out.append([sync.gradient(0).copy(), sync.gradient(1).copy()])
        return out

    for out in run_threads(comms, body):
        for step, (w, b) in enumerate(out):
            np.testing.assert_array_equal(w, np.arange(5, dtype=np.float32) + 5 + step)
            np.testing.assert_array_equal(b, np.arange(3, dtype=np.float64) + 5 + step)
    for c in comms:
        c.destroy()

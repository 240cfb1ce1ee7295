"""BraidCrossDeviceOps called directly: reduce, batch_reduce (SUM, MEAN; several dtypes and
shapes, scalars and empty tensors included) and broadcast, eagerly and inside tf.function, at 2
and 3 replicas, each replica's result checked element by element against numpy; a failure in
the collective raises with Braid's message."""

import numpy as np
import pytest
import tensorflow as tf

import braid
import braid.tensorflow
from conftest import DEVICES, per_replica

SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
# (dtype, shape): packing groups equal dtypes, so two float32 tensors share one buffer.
CASES = [(tf.float32, (7, 3)), (tf.float32, ()), (tf.float64, (13,)), (tf.float16, (5,)),
         (tf.bfloat16, (4, 2)), (tf.int64, (6,)), (tf.float32, (0,)), (tf.float32, (1000,))]


def replica_value(r, j, dtype, shape):
    """Small integers, exact in every dtype: replica r's tensor j."""
    size = int(np.prod(shape))
    values = (np.arange(size) % 7 - 3 + 2 * r + j).astype(np.float64).reshape(shape)
    return values


def make(strategy, j, dtype, shape):
    return per_replica(strategy, lambda r: tf.cast(
        tf.reshape(tf.math.floormod(tf.range(int(np.prod(shape))), 7) - 3 + 2 * r + j, shape),
        dtype))


def expected(nreplicas, j, dtype, shape, op):
    total = sum(replica_value(r, j, dtype, shape) for r in range(nreplicas))
    return total / nreplicas if op == MEAN else total


def check_mirrored(tensors, nreplicas, reference, dtype, check_devices=True):
    """tensors: the per-replica components of a result (Mirrored.values). A tf.function hands
    its outputs back on the caller's device, so devices are checked in eager mode only."""
    assert len(tensors) == nreplicas
    for r, t in enumerate(tensors):
        if check_devices:
            assert t.device.endswith("CPU:%d" % r), t.device
        got = t.numpy().astype(np.float64)
        # MEAN of integers in a float type: one rounding of the division (bfloat16: 8 bits).
        tol = {tf.bfloat16: 2 ** -7, tf.float16: 2 ** -10}.get(dtype, 1e-6)
        np.testing.assert_allclose(got, reference, rtol=tol, atol=0)


_STRATEGIES = {}


@pytest.fixture
def strategy_and_ops(nreplicas):
    """One MirroredStrategy per replica count for the tests that succeed (making them is most of
    these tests' time), its call counter reset for each test."""
    if nreplicas not in _STRATEGIES:
        ops = braid.tensorflow.BraidCrossDeviceOps()
        _STRATEGIES[nreplicas] = (
            tf.distribute.MirroredStrategy(DEVICES[:nreplicas], cross_device_ops=ops), ops)
    strategy, ops = _STRATEGIES[nreplicas]
    ops.braid_calls = 0
    return strategy, ops


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf.function"])
@pytest.mark.parametrize("op", [SUM, MEAN], ids=["SUM", "MEAN"])
def test_batch_reduce(nreplicas, strategy_and_ops, op, graph):
    strategy, ops = strategy_and_ops
    cases = [(d, s) for d, s in CASES if not (op == MEAN and d == tf.int64)]
    values = [make(strategy, j, d, s) for j, (d, s) in enumerate(cases)]

    def run():
        # tf.function returns tensors, not Mirrored values: hand back their components.
        return [m.values for m in ops.batch_reduce(op, [(v, v) for v in values])]

    results = tf.function(run)() if graph else run()
    for j, ((dtype, shape), result) in enumerate(zip(cases, results)):
        check_mirrored(result, nreplicas, expected(nreplicas, j, dtype, shape, op), dtype,
                       check_devices=not graph)
    assert ops.braid_calls == 1  # one group for the whole batch


@pytest.mark.parametrize("op", [SUM, MEAN], ids=["SUM", "MEAN"])
def test_reduce_to_replicas_and_to_one_device(nreplicas, strategy_and_ops, op):
    strategy, ops = strategy_and_ops
    v = make(strategy, 0, tf.float32, (11,))
    reference = expected(nreplicas, 0, tf.float32, (11,), op)
    check_mirrored(ops.reduce(op, v, v).values, nreplicas, reference, tf.float32)
    on_host = ops.reduce(op, v, "/cpu:0")
    assert isinstance(on_host, tf.Tensor) and on_host.device.endswith("CPU:0")
    np.testing.assert_allclose(on_host.numpy(), reference, rtol=1e-6)
    assert ops.braid_calls == 2


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf.function"])
def test_broadcast(nreplicas, strategy_and_ops, graph):
    strategy, ops = strategy_and_ops
    destinations = make(strategy, 0, tf.float32, (2,))
    source = np.arange(10, dtype=np.float64).reshape(2, 5) * 1.5 - 4

    def run():
        return ops.broadcast(tf.constant(source), destinations).values

    result = tf.function(run)() if graph else run()
    assert len(result) == nreplicas
    for r, t in enumerate(result):
        assert graph or t.device.endswith("CPU:%d" % r), t.device
        np.testing.assert_array_equal(t.numpy(), source)
    scalar = ops.broadcast(tf.constant(7, tf.int64), destinations)
    assert [t.numpy() for t in scalar.values] == [7] * nreplicas
    assert all(t.shape == () for t in scalar.values)
    assert ops.braid_calls == 2


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf.function"])
def test_a_failing_collective_raises_with_braids_message(graph):
    # Replicas that disagree on the size (replica r holds r + 1 elements) make Braid's mismatch
    # check fail the allreduce; the error must surface, not hang or return garbage.
    ops = braid.tensorflow.BraidCrossDeviceOps(timeout=10)
    strategy = tf.distribute.MirroredStrategy(DEVICES[:2], cross_device_ops=ops)
    ragged = per_replica(strategy, lambda r: tf.ones(tf.reshape(r + 1, [1])))

    def run():
        return ops.reduce(SUM, ragged, ragged).values

    # Graph mode: the numpy_function op fails with tf.errors.UnknownError carrying
    # "BraidError: <Braid's text>"; eagerly, BraidError itself comes through.
    expected_type = tf.errors.UnknownError if graph else braid.BraidError
    mismatch = (r"operation mismatch: rank 0 called AllReduce\(count=1,float,sum\) #1 but "
                r"rank 1 called AllReduce\(count=2")
    with pytest.raises(expected_type, match=mismatch):
        tf.function(run)() if graph else run()
    if not graph:
        # The communicators stay failed: the next call says so (docs/tensorflow.md).
        with pytest.raises(braid.BraidError, match=r"failed earlier.*ncclInvalidUsage"):
            run()

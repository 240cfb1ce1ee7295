"""braid.tensorflow: tf.distribute.MirroredStrategy's cross-device reductions through Braid.

    import braid.tensorflow
    strategy = tf.distribute.MirroredStrategy(
        devices, cross_device_ops=braid.tensorflow.BraidCrossDeviceOps())

MirroredStrategy runs every replica in this one process, so the reduction uses Braid's
single-process multi-rank path: ``Communicator.init_all(N)`` makes one rank per replica, and one
thread issues a group of N all-reduce calls (one per replica's buffer), which run together when
the group ends. In graph mode (tf.function, Keras ``fit``) that call sits in a
``tf.numpy_function`` op: the op receives every replica's tensors as numpy arrays, calls Braid
and returns the N results, which are then placed on their replicas' devices. The cost is what
numpy_function costs: the op holds the GIL while it runs Python, its inputs and outputs cross the
TF/numpy boundary (outputs are copied into new tensors), and the graph cannot be compiled by XLA
or serialized without the Python function. See docs/tensorflow.md.
"""

import threading

import numpy as np
import tensorflow as tf
# Only this module's base class is public; regrouping per-device results into a Mirrored value,
# the device helpers and the fallbacks are TensorFlow internals (as every CrossDeviceOps
# implementation uses them). Checked with tensorflow 2.21.
from tensorflow.python.distribute import cross_device_ops as tf_cross_device_ops
from tensorflow.python.distribute import distribute_utils
from tensorflow.python.distribute import values as tf_values

from .communicator import Communicator, group

_SUPPORTED_DTYPES = (tf.int8, tf.uint8, tf.int32, tf.uint32, tf.int64, tf.uint64, tf.float16,
                     tf.bfloat16, tf.float32, tf.float64)


def _op_name(reduce_op):
    if reduce_op == tf.distribute.ReduceOp.SUM:
        return "sum"
    if reduce_op == tf.distribute.ReduceOp.MEAN:
        return "avg"
    raise ValueError("reduce_op=%r: BraidCrossDeviceOps reduces with SUM or MEAN" % (reduce_op,))


def _is_dense(per_replica_value):
    return not any(isinstance(v, tf.IndexedSlices) for v in per_replica_value.values)


class BraidCrossDeviceOps(tf.distribute.CrossDeviceOps):
    """All-reduce (reduce, batch_reduce) and broadcast of MirroredStrategy's replicas with Braid.

    ``timeout`` (seconds) bounds every Braid operation (``Communicator.timeout``); a failure in
    the collective raises, in eager mode and inside tf.function alike, an exception whose message
    is Braid's (``tf.errors.UnknownError`` carrying the ``BraidError`` text in graph mode).

    What does not go through Braid, and why: IndexedSlices (sparse) values and gathers use
    tf.distribute.ReductionToOneDevice; int32 values never reach a CrossDeviceOps under
    MirroredStrategy (TensorFlow reduces them itself).
    """

    def __init__(self, timeout=None):
        super().__init__()
        self._timeout = timeout
        self._comms = {}
        # One group at a time drives the communicators: TF may run two reduction ops at once.
        self._lock = threading.Lock()
        self._fallback = tf_cross_device_ops.ReductionToOneDevice()
        self.braid_calls = 0  # groups issued, for tests and diagnosis

    def __deepcopy__(self, memo):
        # Strategies copy their options; the communicators are shared, not copied.
        return self

    def communicators(self, nranks):
        """The communicators (one per replica, ranks in device order) for ``nranks`` replicas."""
        if nranks not in self._comms:
            comms = Communicator.init_all(nranks)
            if self._timeout is not None:
                for c in comms:
                    c.timeout = self._timeout
            self._comms[nranks] = comms
        return self._comms[nranks]

    def close(self):
        for comms in self._comms.values():
            for c in comms:
                c.destroy()
        self._comms = {}

    # --- the numpy side: what runs inside the numpy_function op ------------------------------
    def _all_reduce_arrays(self, op, nreplicas, arrays):
        """arrays: replica 0's tensors, then replica 1's, ... (k each). Tensors of one dtype are
        packed into one buffer per replica, so a step issues one all-reduce per dtype and rank."""
        k = len(arrays) // nreplicas
        by_replica = [arrays[r * k:(r + 1) * k] for r in range(nreplicas)]
        by_dtype = {}
        for j, a in enumerate(by_replica[0]):
            by_dtype.setdefault(np.asarray(a).dtype, []).append(j)
        results = [[None] * k for _ in range(nreplicas)]
        packed = []
        with self._lock:
            comms = self.communicators(nreplicas)
            with group():
                for dtype, indices in by_dtype.items():
                    for r in range(nreplicas):
                        send = np.concatenate([np.asarray(by_replica[r][j]).reshape(-1)
                                               for j in indices]).astype(dtype, copy=False)
                        recv = np.empty_like(send)
                        comms[r].all_reduce(send, recv, op)
                        packed.append((r, indices, recv))
            self.braid_calls += 1
        for r, indices, recv in packed:
            offset = 0
            for j in indices:
                shape = np.shape(by_replica[r][j])
                size = int(np.prod(shape))
                results[r][j] = recv[offset:offset + size].reshape(shape)
                offset += size
        return [a for replica in results for a in replica]

    def _broadcast_array(self, nreplicas, array):
        # (np.ascontiguousarray would turn a scalar into shape (1,).)
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        outs = [np.empty_like(array) for _ in range(nreplicas)]
        with self._lock:
            comms = self.communicators(nreplicas)
            with group():
                comms[0].broadcast(array, outs[0], root=0)
                for r in range(1, nreplicas):
                    comms[r].broadcast(None, outs[r], root=0)
            self.braid_calls += 1
        return outs

    # --- the TensorFlow side ------------------------------------------------------------------
    def _batch_all_reduce(self, reduce_op, per_replica_values):
        """All-reduces dense PerReplica values whose devices match; returns Mirrored values."""
        op = _op_name(reduce_op)
        devices = per_replica_values[0]._devices  # pylint: disable=protected-access
        n = len(devices)
        for v in per_replica_values:
            for t in v.values:
                if t.dtype not in _SUPPORTED_DTYPES:
                    raise TypeError("BraidCrossDeviceOps: %s values have no NCCL type (one of %s)"
                                    % (t.dtype.name, ", ".join(d.name for d in _SUPPORTED_DTYPES)))
        inputs = [v.values[r] for r in range(n) for v in per_replica_values]
        with tf.device(devices[0]):
            outputs = tf.numpy_function(
                lambda *arrays: self._all_reduce_arrays(op, n, arrays), inputs,
                Tout=[t.dtype for t in inputs], stateful=True, name="BraidAllReduce")
        k = len(per_replica_values)
        mirrored = []
        for j in range(k):
            per_device = []
            for r in range(n):
                with tf.device(devices[r]):
                    out = tf.identity(outputs[r * k + j])
                    out.set_shape(inputs[r * k + j].shape)
                    per_device.append(out)
            mirrored.append(distribute_utils.regroup(per_device, wrap_class=tf_values.Mirrored))
        return mirrored

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        if not _is_dense(per_replica_value):
            return self._fallback.reduce_implementation(reduce_op, per_replica_value,
                                                        destinations, options)
        reduced = self._batch_all_reduce(reduce_op, [per_replica_value])[0]
        if tf_cross_device_ops._devices_match(per_replica_value, destinations):  # noqa: SLF001
            return reduced
        # Other destinations (the host, one device): every replica holds the result; copy it.
        return tf_cross_device_ops.simple_broadcast(reduced.values[0], destinations)

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        values = [v for v, _ in value_destination_pairs]
        if (tf_cross_device_ops._all_devices_match(value_destination_pairs)  # noqa: SLF001
                and all(_is_dense(v) for v in values)):
            return self._batch_all_reduce(reduce_op, values)
        return [self.reduce_implementation(reduce_op, v, d, options)
                for v, d in value_destination_pairs]

    def broadcast_implementation(self, tensor, destinations):
        devices = tf_cross_device_ops.get_devices_from(destinations)
        tensor = tf.convert_to_tensor(tensor)
        if len(devices) == 1 or tensor.dtype not in _SUPPORTED_DTYPES:
            return tf_cross_device_ops.simple_broadcast(tensor, destinations,
                                                        always_mirrored=True)
        n = len(devices)
        outputs = tf.numpy_function(lambda array: self._broadcast_array(n, array), [tensor],
                                    Tout=[tensor.dtype] * n, stateful=True,
                                    name="BraidBroadcast")
        per_device = []
        for r, device in enumerate(devices):
            with tf.device(device):
                out = tf.identity(outputs[r])
                out.set_shape(tensor.shape)
                per_device.append(out)
        return distribute_utils.regroup(per_device, wrap_class=tf_values.Mirrored)

    def _gather_implementation(self, per_replica_value, destinations, axis, options):
        return self._fallback._gather_implementation(  # noqa: SLF001
            per_replica_value, destinations, axis, options)

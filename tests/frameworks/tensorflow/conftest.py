"""TensorFlow set-up shared by these tests: three logical CPU devices (MirroredStrategy's
replicas; the tests use the first 2 or all 3), configured before TensorFlow initialises."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

MAX_REPLICAS = 3
_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(MAX_REPLICAS)])
DEVICES = ["/cpu:%d" % i for i in range(MAX_REPLICAS)]


@pytest.fixture(params=[2, 3], ids=["2replicas", "3replicas"])
def nreplicas(request):
    return request.param


def per_replica(strategy, fn):
    """A PerReplica value whose replica r holds fn(r), created on replica r's device."""
    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        return fn(ctx.replica_id_in_sync_group)
    return strategy.run(replica_fn)

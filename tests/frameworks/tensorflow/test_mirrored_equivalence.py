"""Keras fit under MirroredStrategy with BraidCrossDeviceOps against the same fit with
tf.distribute.ReductionToOneDevice: same initial weights, same data and order, K steps; the final
weights must agree within TOLERANCE (the two sum the replicas' gradients in different orders).
Measured (tensorflow 2.21, keras 3): identical at 2 replicas, within a few float32 ulps at 3."""

import numpy as np
import tensorflow as tf

import braid.tensorflow
from conftest import DEVICES

STEPS_PER_EPOCH, EPOCHS, GLOBAL_BATCH = 4, 2, 24   # K = 8 steps; 24 splits over 2 and 3
TOLERANCE = 1e-5  # absolute, on weights of magnitude ~0.1-1


def data():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(STEPS_PER_EPOCH * GLOBAL_BATCH, 8)).astype(np.float32)
    y = (x[:, :3].argmax(axis=1) + (x[:, 3] > 1)).astype(np.int64) % 3
    return x, y


def initial_weights():
    rng = np.random.default_rng(11)
    return [rng.normal(scale=0.3, size=(8, 16)).astype(np.float32), np.zeros(16, np.float32),
            rng.normal(scale=0.3, size=(16, 3)).astype(np.float32), np.zeros(3, np.float32)]


def train(cross_device_ops, nreplicas):
    strategy = tf.distribute.MirroredStrategy(DEVICES[:nreplicas],
                                              cross_device_ops=cross_device_ops)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((8,)),
                                     tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(3)])
        model.set_weights(initial_weights())
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.9),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = data()
    history = model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    return model.get_weights(), history.history["loss"]


def test_braid_matches_reduction_to_one_device(nreplicas):
    ops = braid.tensorflow.BraidCrossDeviceOps()
    braid_weights, braid_loss = train(ops, nreplicas)
    reference_weights, reference_loss = train(tf.distribute.ReductionToOneDevice(), nreplicas)
    # Every step's gradients went through Braid (plus the optimizer's broadcasts).
    assert ops.braid_calls >= STEPS_PER_EPOCH * EPOCHS
    diffs = [float(np.max(np.abs(a - b))) if a.size else 0.0
             for a, b in zip(braid_weights, reference_weights)]
    print("\n%d replicas: max |w_braid - w_reference| per tensor: %s; loss %s vs %s"
          % (nreplicas, diffs, braid_loss, reference_loss))
    assert max(diffs) <= TOLERANCE, diffs
    # The model did train (a no-op reduction would leave it near its start).
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(braid_weights, initial_weights()))
    assert moved > 0.05
    assert braid_loss[-1] < braid_loss[0]

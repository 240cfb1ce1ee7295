#!/usr/bin/env python3
"""A Keras classifier of scikit-learn's handwritten digits (8x8 images, 10 classes) trained under
tf.distribute.MirroredStrategy on N logical CPU devices, with every gradient all-reduce running
through Braid (braid.tensorflow.BraidCrossDeviceOps).

    PYTHONPATH=build/python /opt/braid/tf-venv/bin/python examples/keras/train_mirrored.py

Options: --replicas N (default 2), --epochs, --batch (global batch size), --data (digits.csv.gz,
by default the copy Debian's python3-sklearn ships), --compare (train again with TensorFlow's
ReductionToOneDevice and report the largest weight difference).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def load_digits(path):
    """64 pixel values (0-16) then the label, one image per line; scaled to [0, 1]."""
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    return table[:, :64] / 16.0, table[:, 64].astype(np.int64)


def split(x, y, test_fraction=0.2, seed=0):
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def train(tf, cross_device_ops, devices, train_set, test_set, epochs, batch):
    strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=cross_device_ops)
    with strategy.scope():
        tf.keras.utils.set_random_seed(1)  # same initial weights for every run
        model = tf.keras.Sequential([
            tf.keras.Input((64,)),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05, momentum=0.9),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    # Full batches only: MirroredStrategy splits each global batch evenly over the replicas.
    dataset = (tf.data.Dataset.from_tensor_slices(train_set)
               .shuffle(len(train_set[0]), seed=2, reshuffle_each_iteration=True)
               .batch(batch, drop_remainder=True))
    start = time.perf_counter()
    model.fit(dataset, epochs=epochs, shuffle=False, verbose=0)  # tf.data shuffles
    seconds = time.perf_counter() - start
    _, accuracy = model.evaluate(*test_set, batch_size=batch, verbose=0)
    return model, accuracy, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="global batch size")
    parser.add_argument("--data", default=DIGITS)
    parser.add_argument("--compare", action="store_true",
                        help="also train with tf.distribute.ReductionToOneDevice")
    args = parser.parse_args()

    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(args.replicas)])
    devices = ["/cpu:%d" % i for i in range(args.replicas)]

    import braid.tensorflow

    batch = args.batch - args.batch % args.replicas  # a multiple of the replica count
    train_set, test_set = split(*load_digits(args.data))
    print("digits: %d training and %d test images, %d replicas, global batch %d, %d epochs"
          % (len(train_set[0]), len(test_set[0]), args.replicas, batch, args.epochs))

    ops = braid.tensorflow.BraidCrossDeviceOps()
    model, accuracy, seconds = train(tf, ops, devices, train_set, test_set, args.epochs, batch)
    print("Braid:                test accuracy %.4f, training %.1f s (%d Braid group calls)"
          % (accuracy, seconds, ops.braid_calls))
    if args.compare:
        reference, ref_accuracy, ref_seconds = train(
            tf, tf.distribute.ReductionToOneDevice(), devices, train_set, test_set, args.epochs,
            batch)
        diff = max(float(np.max(np.abs(a - b)))
                   for a, b in zip(model.get_weights(), reference.get_weights()))
        print("ReductionToOneDevice: test accuracy %.4f, training %.1f s; "
              "largest weight difference %.3g" % (ref_accuracy, ref_seconds, diff))


if __name__ == "__main__":
    main()

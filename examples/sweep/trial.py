"""One trial of examples/sweep: fit y = 3x + 1 by gradient descent with the learning rate in $LEARNING_RATE, and
print the final loss (a real, tiny workload: a sweep's jobs differ only by their hyper-parameters)."""

import os
import random

rate = float(os.environ["LEARNING_RATE"])
rng = random.Random(0)
points = [(x, 3 * x + 1 + rng.gauss(0, 0.1)) for x in (rng.uniform(-1, 1) for _ in range(200))]
w = b = 0.0
for _step in range(300):
    gw = sum(2 * (w * x + b - y) * x for x, y in points) / len(points)
    gb = sum(2 * (w * x + b - y) for x, y in points) / len(points)
    w, b = w - rate * gw, b - rate * gb
loss = sum((w * x + b - y) ** 2 for x, y in points) / len(points)
print(f"{os.environ['HOSTNAME']}: learning rate {rate:g}: w {w:.3f} b {b:.3f} loss {loss:.5f}", flush=True)

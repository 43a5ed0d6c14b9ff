"""Few-shot softmax regression on scikit-learn's bundled digits data (numpy only).

Each seed draws a different 60-image training subset and weight init; the paper
reports the mean test accuracy over seeds 0-4.
"""
import argparse
import gzip
import importlib.util
import os

import numpy as np


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits.csv.gz, read without importing scikit-learn (fast start)."""
    spec = importlib.util.find_spec("sklearn")
    path = os.path.join(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as fh:
        data = np.loadtxt(fh, delimiter=",")
    return data[:, :-1] / 16.0, data[:, -1].astype(int)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    X, y = load_digits()
    test = np.arange(len(y)) % 3 == 0
    X_te, y_te = X[test], y[test]
    rng = np.random.default_rng(args.seed)
    pool = np.flatnonzero(~test)
    idx = rng.choice(pool, size=60, replace=False)
    X_tr, y_tr = X[idx], y[idx]
    W = rng.normal(0, 0.5, size=(64, 10))
    onehot = np.eye(10)[y_tr]
    for _ in range(60):
        z = X_tr @ W
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        W -= 0.5 * X_tr.T @ (p - onehot) / len(y_tr)
    acc = float(((X_te @ W).argmax(1) == y_te).mean())
    print(f"seed {args.seed} accuracy {acc:.4f}")


if __name__ == "__main__":
    main()

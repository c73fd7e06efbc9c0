#!/usr/bin/env python3
"""Fits the degree-3 polynomial step 26 uses for 2^f on [-0.5, 0.5] (kernels/versions/v26/
online_softmax.cuh, exp2_on_fma) and prints its coefficients and its largest relative error,
evaluated in fp32 the way the kernel evaluates it (Horner form, fp32 rounding after each step).

The fit minimises the maximum relative error with Lawson's iteration: a weighted least-squares fit
on Chebyshev nodes whose weights grow with each node's error, which converges to the minimax
polynomial. Pure Python (no numpy), so it runs wherever the repository builds.

    scripts/fit_exp2_polynomial.py [--degree 3]
"""
import argparse
import math
import struct


def to_f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def solve(matrix, rhs):
    """Gaussian elimination with partial pivoting; small dense systems only."""
    n = len(rhs)
    rows = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col:
                factor = rows[r][col] / rows[col][col]
                for k in range(col, n + 1):
                    rows[r][k] -= factor * rows[col][k]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def fit(degree: int, iterations: int = 200):
    nodes = [0.5 * math.cos(math.pi * k / 1000) for k in range(1001)]
    targets = [2.0**x for x in nodes]
    weights = [1.0] * len(nodes)
    coefficients = []
    for _ in range(iterations):
        normal = [[0.0] * (degree + 1) for _ in range(degree + 1)]
        rhs = [0.0] * (degree + 1)
        for x, y, w in zip(nodes, targets, weights):
            # Relative error: fit p(x) / y to 1.
            basis = [x**i / y for i in range(degree + 1)]
            for i in range(degree + 1):
                rhs[i] += w * basis[i]
                for j in range(degree + 1):
                    normal[i][j] += w * basis[i] * basis[j]
        coefficients = solve(normal, rhs)
        errors = [abs(sum(c * x**i for i, c in enumerate(coefficients)) / y - 1)
                  for x, y in zip(nodes, targets)]
        total = sum(w * e for w, e in zip(weights, errors))
        weights = [max(w * e / total, 1e-30) for w, e in zip(weights, errors)]
    return [to_f32(c) for c in coefficients]


def worst_fp32_error(coefficients, samples: int = 200000) -> float:
    worst = 0.0
    for k in range(samples + 1):
        x = to_f32(-0.5 + k / samples)
        value = coefficients[-1]
        for c in reversed(coefficients[:-1]):
            value = to_f32(to_f32(value * x) + c)
        worst = max(worst, abs(value / 2.0**x - 1))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--degree", type=int, default=3, help="polynomial degree (default 3)")
    args = parser.parse_args()
    coefficients = fit(args.degree)
    for i, c in enumerate(coefficients):
        print(f"c{i} = {c:.9g}f")
    print(f"max relative error (fp32 Horner on [-0.5, 0.5]): {worst_fp32_error(coefficients):.3g}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs cuscan's CPU benchmark rows through NumPy on the same machine.

Usage: compare_numpy.py CASES_CSV [--reps N]
CASES_CSV lines: name,shape(x-separated),dim(1-based),dtype,op   (bench/bench.lua writes it)
scan ops: cumsum cumprod reverse_cumsum masked_cumsum exclusive_cumsum reverse_exclusive_cumsum
element-wise ops (dim ignored): mul_scalar add exp lt_scalar to_float64 transpose_copy fill
Prints CSV lines: name,op,numpy_ms,,copy_ms (the same columns as compare_torch.py, the empty one
being its torch.compile time); times are medians of wall-clock timings after warm-up.

NumPy has no reverse, exclusive or masked scan, so those are written the way its users write
them: a cumsum of a flipped view flipped back, cumsum minus the input, cumsum(where(mask, x, 0)).
Each result goes into a preallocated array (out=) where NumPy takes one, NumPy's fastest form.
NumPy runs on one core; its float32 cumsum accumulates in float32, cuscan's in float64.
"""
import statistics
import sys
import time


def main():
    try:
        import numpy as np
    except ImportError:
        print("# numpy not available", file=sys.stderr)
        return 2
    args = sys.argv[1:]
    reps = int(args[args.index("--reps") + 1]) if "--reps" in args else 10
    cases = [line.strip().split(",") for line in open(args[0]) if line.strip() and not line.startswith("#")]
    rng = np.random.default_rng(1)

    def scan(op, d):
        if op == "cumsum":
            return lambda x, m, y: np.cumsum(x, axis=d, out=y)
        if op == "cumprod":
            return lambda x, m, y: np.cumprod(x, axis=d, out=y)
        if op == "reverse_cumsum":
            return lambda x, m, y: np.flip(np.cumsum(np.flip(x, d), axis=d), d)
        if op == "masked_cumsum":
            return lambda x, m, y: np.cumsum(np.where(m, x, 0), axis=d, out=y)
        if op == "exclusive_cumsum":
            return lambda x, m, y: np.subtract(np.cumsum(x, axis=d, out=y), x, out=y)
        if op == "reverse_exclusive_cumsum":
            return lambda x, m, y: np.flip(np.cumsum(np.flip(x, d), axis=d), d) - x
        if op == "logcumsumexp":
            return lambda x, m, y: np.logaddexp.accumulate(x, axis=d, out=y)
        if op == "mul_scalar":
            return lambda x, m, y: np.multiply(x, 1, out=y)
        if op == "add":
            return lambda x, m, y: np.add(x, m, out=y)
        if op == "exp":
            return lambda x, m, y: np.exp(x, out=y)
        if op == "lt_scalar":
            return lambda x, m, y: np.less(x, 0.5)
        if op == "to_float64":
            return lambda x, m, y: x.astype(np.float64)
        if op == "transpose_copy":
            return lambda x, m, y: np.copyto(y, x.T)
        if op == "fill":
            return lambda x, m, y: y.fill(3)
        raise ValueError(op)

    def median_ms(fn, x, m, y):
        for _ in range(2):
            fn(x, m, y)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(x, m, y)
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    # NumPy has no bfloat16, no cummax with indices and no segmented scan: those rows get no peer
    dtypes = {"float32": np.float32, "float64": np.float64, "float16": np.float16}
    current = None
    for name, shape, dim, dtype, op in cases:
        if dtype not in dtypes or op in ("cummax_indices", "segmented_cumsum"):
            continue
        key = (shape, dtype)
        if current is None or current[0] != key:
            current = None
            dims = [int(s) for s in shape.split("x")]
            x = rng.random(dims, dtype=np.float64).astype(dtypes[dtype])
            m = rng.random(dims) < 0.5
            y = np.empty_like(x)
            copy_ms = median_ms(lambda a, b, c: np.copyto(c, a), x, m, y)
            current = (key, x, m, y, copy_ms)
        _, x, m, y, copy_ms = current
        second = x + 1 if op == "add" else m
        numpy_ms = median_ms(scan(op, int(dim) - 1), x, second, y)
        print("%s,%s,%.4f,,%.4f" % (name, op, numpy_ms, copy_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

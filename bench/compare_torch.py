#!/usr/bin/env python3
"""Runs cuscan's benchmark rows through PyTorch eager and torch.compile on the same device.

Usage: compare_torch.py CASES_CSV [--compile] [--reps N]
CASES_CSV lines: name,shape(x-separated),dim(1-based),dtype,op   (bench/bench.lua writes it)
ops: cumsum cumprod reverse_cumsum masked_cumsum exclusive_cumsum reverse_exclusive_cumsum
Prints CSV lines: name,op,eager_ms,compile_ms,copy_ms (compile_ms empty without --compile or on
failure); times are medians of CUDA-event timings after warm-up, as cuscan's own bench takes them.

PyTorch has no reverse or exclusive scan, so those are written the way its users write them:
flip/cumsum/flip, and cumsum minus the input; the masked cumsum is cumsum(where(mask, x, 0)).
"""
import sys
import statistics


def main():
    try:
        import torch
    except ImportError:
        print("# torch not available", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("# no CUDA device for torch", file=sys.stderr)
        return 2
    args = sys.argv[1:]
    use_compile = "--compile" in args
    reps = int(args[args.index("--reps") + 1]) if "--reps" in args else 10
    cases = [line.strip().split(",") for line in open(args[0]) if line.strip() and not line.startswith("#")]

    def ops(op, d):
        if op == "cumsum":
            return lambda x, m: torch.cumsum(x, d)
        if op == "cumprod":
            return lambda x, m: torch.cumprod(x, d)
        if op == "reverse_cumsum":
            return lambda x, m: torch.flip(torch.cumsum(torch.flip(x, (d,)), d), (d,))
        if op == "masked_cumsum":
            return lambda x, m: torch.cumsum(torch.where(m, x, torch.zeros((), dtype=x.dtype, device=x.device)), d)
        if op == "exclusive_cumsum":
            return lambda x, m: torch.cumsum(x, d) - x
        if op == "reverse_exclusive_cumsum":
            return lambda x, m: torch.flip(torch.cumsum(torch.flip(x, (d,)), d), (d,)) - x
        raise ValueError(op)

    def median_ms(fn, x, m):
        for _ in range(3):
            fn(x, m)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            fn(x, m)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        return statistics.median(times)

    dtypes = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
              "bfloat16": torch.bfloat16}
    current = None
    for name, shape, dim, dtype, op in cases:
        key = (shape, dtype)
        if current is None or current[0] != key:
            current = None
            torch.cuda.empty_cache()
            dims = [int(s) for s in shape.split("x")]
            x = torch.rand(dims, dtype=dtypes[dtype], device="cuda")
            m = torch.rand(dims, device="cuda") < 0.5
            y = torch.empty_like(x)
            copy_ms = median_ms(lambda a, b: y.copy_(a), x, m)
            current = (key, x, m, copy_ms)
        _, x, m, copy_ms = current
        d = int(dim) - 1
        fn = ops(op, d)
        eager = median_ms(fn, x, m)
        compiled = ""
        if use_compile:
            try:
                cfn = torch.compile(fn, dynamic=False)
                compiled = "%.4f" % median_ms(cfn, x, m)
            except Exception as e:  # report, keep going
                print("# torch.compile failed for %s %s: %s" % (name, op, str(e).splitlines()[0]), file=sys.stderr)
            torch._dynamo.reset()
        print("%s,%s,%.4f,%s,%.4f" % (name, op, eager, compiled, copy_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs cuscan's benchmark rows through PyTorch eager and torch.compile on the same device.

Usage: compare_torch.py CASES_CSV [--compile] [--reps N]
CASES_CSV lines: name,shape(x-separated),dim(1-based),dtype,op   (bench/bench.lua writes it)
ops: cumsum cumprod reverse_cumsum masked_cumsum exclusive_cumsum reverse_exclusive_cumsum
     cummax_indices logcumsumexp segmented_cumsum
Prints CSV lines: name,op,eager_ms,compile_ms,copy_ms (eager_ms empty where this PyTorch lacks the
op for the dtype, compile_ms without --compile or on failure); times are medians of CUDA-event
timings after warm-up, as cuscan's own bench takes them.

PyTorch has no reverse or exclusive scan, so those are written the way its users write them:
flip/cumsum/flip, and cumsum minus the input; the masked cumsum is cumsum(where(mask, x, 0)).
cummax and logcumsumexp are torch.cummax (values and indices) and torch.logcumsumexp. PyTorch has
no segmented scan (pytorch#53095): the fastest formulation its users write is cumsum and subtract,
the running sum minus the exclusive prefix at the segment's first element, found as the running
maximum of the reset positions (a reset every 1000 elements or so, as bench.lua draws it).
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

    def segmented_cumsum(x, r, d):
        c = torch.cumsum(x, d)
        shape = [1] * x.dim()
        shape[d] = x.shape[d]
        pos = torch.arange(x.shape[d], device=x.device).view(shape)
        first = torch.cummax(torch.where(r, pos, 0), d).values  # each element's segment start
        return c - torch.gather(c - x, d, first)

    def ops(op, d):
        if op == "cumsum":
            return lambda x, m, r: torch.cumsum(x, d)
        if op == "cumprod":
            return lambda x, m, r: torch.cumprod(x, d)
        if op == "reverse_cumsum":
            return lambda x, m, r: torch.flip(torch.cumsum(torch.flip(x, (d,)), d), (d,))
        if op == "masked_cumsum":
            return lambda x, m, r: torch.cumsum(torch.where(m, x, torch.zeros((), dtype=x.dtype, device=x.device)), d)
        if op == "exclusive_cumsum":
            return lambda x, m, r: torch.cumsum(x, d) - x
        if op == "reverse_exclusive_cumsum":
            return lambda x, m, r: torch.flip(torch.cumsum(torch.flip(x, (d,)), d), (d,)) - x
        if op == "cummax_indices":
            return lambda x, m, r: torch.cummax(x, d)
        if op == "logcumsumexp":
            return lambda x, m, r: torch.logcumsumexp(x, d)
        if op == "segmented_cumsum":
            return lambda x, m, r: segmented_cumsum(x, r, d)
        raise ValueError(op)

    def median_ms(fn, x, m, r):
        for _ in range(3):
            fn(x, m, r)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            fn(x, m, r)
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
            r = torch.rand(dims, device="cuda") < 0.001
            y = torch.empty_like(x)
            copy_ms = median_ms(lambda a, b, c: y.copy_(a), x, m, r)
            current = (key, x, m, r, copy_ms)
        _, x, m, r, copy_ms = current
        d = int(dim) - 1
        fn = ops(op, d)
        try:
            eager = "%.4f" % median_ms(fn, x, m, r)
        except RuntimeError as e:  # an op this PyTorch lacks for the dtype: report, keep going
            print("# torch eager failed for %s %s: %s" % (name, op, str(e).splitlines()[0]), file=sys.stderr)
            print("%s,%s,,,%.4f" % (name, op, copy_ms), flush=True)
            continue
        compiled = ""
        if use_compile:
            try:
                cfn = torch.compile(fn, dynamic=False)
                compiled = "%.4f" % median_ms(cfn, x, m, r)
            except Exception as e:  # report, keep going
                print("# torch.compile failed for %s %s: %s" % (name, op, str(e).splitlines()[0]), file=sys.stderr)
            torch._dynamo.reset()
        print("%s,%s,%s,%s,%.4f" % (name, op, eager, compiled, copy_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

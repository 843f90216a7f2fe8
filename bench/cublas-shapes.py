#!/usr/bin/env python3
"""cuBLAS's time for the matmul shapes of a profiled step, beside parplan's.

Reads the "profile shape nn.matmul DTYPE m=M n=N k=K batch=B: C calls, T ms
per step, ..." lines of `parplan-run --profile` and times each shape with
PyTorch's matmul (cuBLAS) on contiguous operands: the median of several
products after warm-up, CUDA events. Prints one line:

    cublas_ms=X parplan_ms=Y

the per-step sums over the shapes (calls x time). Y / X above 1: parplan's
matmuls are slower than cuBLAS's best layout for the same shapes (layouts,
hidden copies). `--tf32` lets float32 products use TF32 tensor cores, as
`parplan-run --tf32` does. Needs PyTorch with CUDA; exits 2 without it.
"""
import re
import sys

try:
    import torch
except ImportError:
    sys.exit(2)
if not torch.cuda.is_available():
    sys.exit(2)

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
LINE = re.compile(r"^profile shape nn\.(?:matmul|gemm) (\w+) m=(\d+) n=(\d+) "
                  r"k=(\d+) batch=(\d+): ([0-9.]+) calls, ([0-9.]+) ms per step")


def time_ms(dtype, m, n, k, batch, repeats=20):
    a = torch.rand(batch, m, k, device="cuda", dtype=dtype) - 0.5
    b = torch.rand(batch, k, n, device="cuda", dtype=dtype) - 0.5
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    torch.backends.cuda.matmul.allow_tf32 = "--tf32" in sys.argv
    cublas = ours = 0.0
    with open(args[0]) as profile:
        for line in profile:
            match = LINE.match(line)
            if not match or match.group(1) not in DTYPES:
                continue
            dtype = DTYPES[match.group(1)]
            m, n, k, batch = (int(match.group(i)) for i in range(2, 6))
            calls, ms = float(match.group(6)), float(match.group(7))
            cublas += calls * time_ms(dtype, m, n, k, batch)
            ours += ms
    print(f"cublas_ms={cublas:.3f} parplan_ms={ours:.3f}")


if __name__ == "__main__":
    main()

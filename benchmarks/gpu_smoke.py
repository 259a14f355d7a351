"""GPU smoke benchmark: the examples through `cudasmith eval`, and how long fast compilation takes.

    python benchmarks/gpu_smoke.py [EXAMPLE ...]   # default: softmax_cuda.py softmax_triton.py

Prints, for each GPU example on level1/softmax, the verdict and per-config medians against eager
PyTorch; then the time of a fresh (uncached) NVRTC compilation of a small kernel, with and without
the first-use cost of loading NVRTC. Needs a CUDA GPU.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("softmax_cuda.py", "softmax_triton.py")
SMALL_KERNEL = r"""
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
COMPILE_REPEATS = 5


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    os.environ.setdefault("CUDASMITH_CACHE", tempfile.mkdtemp(prefix="cudasmith-smoke-"))
    import cudasmith
    from cudasmith.runtime import compile_cuda

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for example in sys.argv[1:] or EXAMPLES:
        # Eager PyTorch only: torch.compile's max-autotune alone takes minutes per config.
        verdict = cudasmith.evaluate(
            ROOT / "examples" / example, task="level1/softmax", device="cuda", baselines=("eager",)
        )
        print(f"\n{example}: {verdict.status}: {verdict.reason} ({verdict.wall_s:.1f} s wall)")
        for config in verdict.configs:
            print(
                f"  {config.config!s:32} rel_err {config.rel_err or 0:.1e}  "
                f"{config.time_ms or 0:9.4f} ms  eager {config.baseline_ms or 0:9.4f} ms  "
                f"{config.speedup or 0:5.2f}x"
            )

    times = []
    for repeat in range(COMPILE_REPEATS):
        source = SMALL_KERNEL + f"\n// fresh {time.time_ns()} {repeat}\n"
        started = time.perf_counter()
        kernel = compile_cuda(source, "axpy")
        times.append(time.perf_counter() - started)
        assert not kernel.from_cache
    print(
        f"\nNVRTC compile of a small kernel, uncached: first {times[0] * 1e3:.0f} ms (loads NVRTC), "
        f"then median {sorted(times[1:])[len(times[1:]) // 2] * 1e3:.0f} ms over {len(times) - 1}"
    )


if __name__ == "__main__":
    main()

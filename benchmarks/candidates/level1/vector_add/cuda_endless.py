"""HANGS on purpose. Vector sum, NVRTC CUDA, whose kernel waits for a flag that nothing ever sets.

Expected verdict: timeout

The first call never returns: the kernel spins on a zeroed flag read through a volatile pointer (so the
compiler keeps the loop), and forward then waits for it. Only the judge's call time limit ends it; the
time that costs is the "hang" figure of benchmarks/throughput.py. Nothing inside the process can stop
the kernel, so the judge must kill the worker process.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
extern "C" __global__ void add_after_flag(const float* a, const float* b, float* c, long long n,
                                          volatile int* flag) {
    while (flag[0] == 0) { }
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

add_after_flag = compile_cuda(SOURCE, "add_after_flag")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty_like(a)
        flag = torch.zeros(1, dtype=torch.int32, device=a.device)
        n = a.numel()
        add_after_flag(a, b, c, n, flag, grid=(n + 255) // 256, block=256)
        torch.cuda.synchronize()
        return c

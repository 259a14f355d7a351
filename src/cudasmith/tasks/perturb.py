"""Perturbing a timed call's inputs, so that no call sees inputs an earlier one saw.

A random half of the normal floating values (chosen by a hash of the seed, the tensor's index and the
element's position) get one mantissa bit flipped, which moves each by a small fraction of itself:
2.4e-4 to 4.9e-4 (float32), 1.6 to 3.1 % (float16), 6 to 12 % (bfloat16), 4.8e-7 to 9.5e-7 (float64). That
is a few times the elementwise tolerance of harness/workers/check.py, so an output computed for other inputs (a
cached one) fails the comparison, while every value keeps its sign, exponent and finiteness. Zero,
subnormals, infinities and NaN are left alone, which makes a perturbation its own inverse: the same
seed again restores the inputs bit for bit.

It runs once per timed call on every input, so it is one pass over the data: a C function (OpenMP) on
the CPU and an NVRTC kernel on the GPU, compiled before any solution loads, in memory: never loaded from
the build cache, which candidates can write (a replaced library would run inside the judge's workers). Where neither compiler is
there, the same hash in PyTorch operations gives the same bits, so a judge and a candidate agree
whichever way each computed it.
"""

from __future__ import annotations

from typing import Any

import torch

# Per float format: the width of its integer view, the bits of its exponent, the mantissa bit flipped.
FLOAT_BITS = {
    torch.float64: (8, 0x7FF0000000000000, 32),
    torch.float32: (4, 0x7F800000, 12),
    torch.float16: (2, 0x7C00, 5),
    torch.bfloat16: (2, 0x7F80, 4),
}
_INT_VIEW = {8: torch.int64, 4: torch.int32, 2: torch.int16}
# splitmix64's constants, and the odd multiplier that spreads element positions over the seed.
_GAMMA, _MIX1, _MIX2, _SPREAD = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD1B54A32D192ED03

_MIX = r"""
typedef unsigned long long u64;
DEVICE u64 cudasmith_mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
"""
# The element's choice is the low bit of the mix of the seed and its position; its exponent decides
# whether it is a normal value (neither zero/subnormal nor Inf/NaN).
_FLIP = r"""
DEVICE void cudasmith_flip(void* data, long i, long width, u64 seed, u64 exponent_bits, int bit) {
    if (!(cudasmith_mix(seed ^ ((u64)i * 0xD1B54A32D192ED03ull)) & 1ull)) return;
    if (width == 4) {
        unsigned int* p = (unsigned int*)data; unsigned int e = p[i] & (unsigned int)exponent_bits;
        if (e != 0u && e != (unsigned int)exponent_bits) p[i] ^= 1u << bit;
    } else if (width == 2) {
        unsigned short* p = (unsigned short*)data; unsigned short e = p[i] & (unsigned short)exponent_bits;
        if (e != 0 && e != (unsigned short)exponent_bits) p[i] ^= (unsigned short)(1u << bit);
    } else {
        u64* p = (u64*)data; u64 e = p[i] & exponent_bits;
        if (e != 0ull && e != exponent_bits) p[i] ^= 1ull << bit;
    }
}
"""
# On the CPU one loop per width, the flip chosen without a branch: the compiler vectorises the mix, which
# makes the pass some 30 times faster than cudasmith_flip's per-element branches (2 x 3M float32: 0.5 ms
# against 16 ms on 2 cores), the same bits.
C_SOURCE = (
    "#define DEVICE static inline\n"
    + _MIX
    + r"""
#define CUDASMITH_FLIP_ALL(T) {                                                                       \
    T* p = (T*)data; const T exponent = (T)exponent_bits, mask = (T)((T)1 << bit);                   \
    _Pragma("omp parallel for simd")                                                                 \
    for (long i = 0; i < n; ++i) {                                                                   \
        T chosen = (T)(cudasmith_mix(seed ^ ((u64)i * 0xD1B54A32D192ED03ull)) & 1ull);               \
        T e = p[i] & exponent;                                                                       \
        T normal = (T)(e != 0 && e != exponent);                                                     \
        p[i] ^= (T)(mask & (T)(0 - (T)(chosen & normal)));                                           \
    }                                                                                                \
}
void cudasmith_perturb(void* data, long n, long width, unsigned long long seed, unsigned long long exponent_bits,
                       int bit) {
    if (width == 4) CUDASMITH_FLIP_ALL(unsigned int)
    else if (width == 2) CUDASMITH_FLIP_ALL(unsigned short)
    else CUDASMITH_FLIP_ALL(u64)
}
"""
)
CUDA_SOURCE = (
    "#define DEVICE __device__ __forceinline__\n"
    + _MIX
    + _FLIP
    + r"""
extern "C" __global__ void cudasmith_perturb(void* data, long n, long width, unsigned long long seed,
                                             unsigned long long exponent_bits, int bit) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        cudasmith_flip(data, i, width, seed, exponent_bits, bit);
}
"""
)
NAME = "cudasmith_perturb"
CUDA_THREADS = 256
CUDA_MAX_BLOCKS = 4096

# The compiled functions, once prepared. Module-level names bound to callables, so the worker's tamper
# checks (harness/workers/tamper.py), which cover this module, see a replacement.
_cpu_kernel: Any = None
_cuda_kernel: Any = None


def prepare(device: str) -> bool:
    """Compile the perturbation for a device (before any solution loads); False where it falls back."""
    global _cpu_kernel, _cuda_kernel
    try:
        if device.startswith("cuda") and _cuda_kernel is None:
            from cudasmith.runtime.cuda import compile_cuda

            _cuda_kernel = compile_cuda(CUDA_SOURCE, NAME, disk_cache=False)
        elif not device.startswith("cuda") and _cpu_kernel is None:
            from cudasmith.runtime.cpu import compile_c

            _cpu_kernel = compile_c(C_SOURCE, NAME, disk_cache=False)
    except Exception:  # no compiler here: PyTorch operations compute the same bits
        return False
    return True


def _tensor_seed(seed: int, index: int) -> int:
    from cudasmith.tasks.inputs import derive_seed

    return derive_seed(seed, index) & 0xFFFFFFFFFFFFFFFF


def perturb_inputs(inputs: list[Any], seed: int) -> None:
    """Move a random half of the normal floating input values by a small fraction of themselves, in place
    (see the module's docstring); a second call with the same seed undoes the first."""
    from cudasmith.tasks.inputs import input_tensors

    for index, tensor in enumerate(input_tensors(inputs)):
        if tensor.dtype not in FLOAT_BITS or tensor.numel() == 0:
            continue
        width, exponent_bits, bit = FLOAT_BITS[tensor.dtype]
        tensor_seed = _tensor_seed(seed, index)
        compiled = (_cuda_kernel if tensor.is_cuda else _cpu_kernel) if tensor.is_contiguous() else None
        if compiled is None:
            _perturb_with_torch(tensor, width, tensor_seed, exponent_bits, bit)
        elif tensor.is_cuda:
            blocks = min(CUDA_MAX_BLOCKS, -(-tensor.numel() // CUDA_THREADS))
            compiled(
                tensor,
                tensor.numel(),
                width,
                tensor_seed,
                exponent_bits,
                bit,
                grid=blocks,
                block=CUDA_THREADS,
            )
        else:
            compiled(tensor, tensor.numel(), width, tensor_seed, exponent_bits, bit)


def _signed(value: int) -> int:
    """A 64-bit pattern as the int64 that holds it."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _shift_right(z: torch.Tensor, count: int) -> torch.Tensor:
    """Logical shift of int64 bit patterns (torch's >> keeps the sign)."""
    return (z >> count) & ((1 << (64 - count)) - 1)


def _mix(z: torch.Tensor) -> torch.Tensor:
    """splitmix64 on int64 tensors (multiplication wraps, as unsigned arithmetic does)."""
    z = z + _signed(_GAMMA)
    z = (z ^ _shift_right(z, 30)) * _signed(_MIX1)
    z = (z ^ _shift_right(z, 27)) * _signed(_MIX2)
    return z ^ _shift_right(z, 31)


def _perturb_with_torch(tensor: torch.Tensor, width: int, seed: int, exponent_bits: int, bit: int) -> None:
    """The compiled functions' bits, computed with PyTorch operations (slower; any layout, no compiler)."""
    positions = torch.arange(tensor.numel(), device=tensor.device, dtype=torch.int64)
    flip = (_mix(positions * _signed(_SPREAD) ^ _signed(seed)) & 1).bool().reshape(tensor.shape)
    bits = tensor.view(_INT_VIEW[width])
    mask = exponent_bits - (1 << 16) if width == 2 and exponent_bits >= 1 << 15 else _signed(exponent_bits)
    exponent = bits & mask
    normal = (exponent != 0) & (exponent != mask)
    flip_bit = _signed(1 << bit) if width == 8 else (1 << bit) - (1 << 16 if width == 2 and bit >= 15 else 0)
    bits ^= torch.where(flip & normal, torch.full((), flip_bit, dtype=bits.dtype, device=bits.device), 0)

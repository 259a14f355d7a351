"""Converting Python call arguments into C values for a kernel or a C function."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import torch

from cudasmith.runtime.signature import HALF_TYPES, Param

_INT_LIMITS = {
    ctypes.c_int8: (-(2**7), 2**7 - 1),
    ctypes.c_uint8: (0, 2**8 - 1),
    ctypes.c_int16: (-(2**15), 2**15 - 1),
    ctypes.c_uint16: (0, 2**16 - 1),
    ctypes.c_int32: (-(2**31), 2**31 - 1),
    ctypes.c_uint32: (0, 2**32 - 1),
    ctypes.c_int64: (-(2**63), 2**63 - 1),
    ctypes.c_uint64: (0, 2**64 - 1),
}


def _describe(param: Param | None, index: int) -> str:
    if param is None or not param.name:
        return f"argument {index}"
    return f"argument {index} ({param.type_name}{' *' if param.pointer else ''} {param.name})"


def pack_argument(param: Param | None, value: Any, index: int, device_type: str) -> ctypes._CData:
    """One argument as a ctypes value whose bytes are what the C parameter expects.

    `device_type` is where pointers must point: 'cuda' for kernels, 'cpu' for C functions.
    """
    where = _describe(param, index)
    if isinstance(value, torch.Tensor):
        if param is not None and not param.pointer:
            raise TypeError(f"{where} is not a pointer but got a tensor")
        if value.device.type != device_type:
            raise TypeError(f"{where} must be a {device_type} tensor, got one on {value.device}")
        return ctypes.c_void_p(value.data_ptr())
    if isinstance(value, ctypes._SimpleCData | ctypes.Structure | ctypes.Array):
        return value
    if isinstance(value, np.generic):
        typed = param is not None and (param.scalar_ctype is not None or param.type_name in HALF_TYPES)
        if typed:
            value = value.item()
        elif device_type == "cuda":  # a kernel parameter is bytes: those of the NumPy scalar
            return (ctypes.c_char * value.nbytes).from_buffer_copy(value.tobytes())
        else:
            raise TypeError(f"{where}: a NumPy scalar needs a parameter of a plain scalar type")
    if param is not None and param.pointer:
        if value is None or isinstance(value, int):
            return ctypes.c_void_p(value)
        raise TypeError(f"{where} is a pointer: pass a tensor, not {type(value).__name__}")
    if param is None:
        raise TypeError(
            f"{where}: the function's signature was not found in the source, so a Python "
            f"{type(value).__name__} has no C type; pass np.int32(...), np.float32(...) or a ctypes value"
        )
    if param.type_name in HALF_TYPES:
        bits = torch.tensor(float(value), dtype=getattr(torch, HALF_TYPES[param.type_name]))
        return ctypes.c_uint16(int(bits.view(torch.int16).item()) & 0xFFFF)
    ctype = param.scalar_ctype
    if ctype is None:
        raise TypeError(
            f"{where}: type '{param.type_name}' is not a plain scalar; pass a ctypes value or NumPy scalar"
        )
    if ctype in _INT_LIMITS:
        if isinstance(value, float) or not isinstance(value, int):
            raise TypeError(f"{where} is an integer; got {type(value).__name__} {value!r}")
        low, high = _INT_LIMITS[ctype]
        if not low <= value <= high:
            raise OverflowError(f"{where}: {value} does not fit in {param.type_name}")
    elif not isinstance(value, int | float | bool):
        raise TypeError(f"{where} is {param.type_name}; got {type(value).__name__}")
    return ctype(value)


def pack_arguments(
    params: list[Param] | None, values: tuple[Any, ...], device_type: str, what: str
) -> list[ctypes._CData]:
    """All arguments of one call, checked against the parameter count when the signature is known."""
    if params is not None and len(params) != len(values):
        raise TypeError(f"{what} takes {len(params)} arguments, got {len(values)}")
    return [
        pack_argument(None if params is None else params[i], value, i, device_type)
        for i, value in enumerate(values)
    ]

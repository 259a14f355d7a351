"""Messages between the parent and its workers: a JSON header, then each tensor as raw bytes.

Nothing is pickled: the parent decodes only JSON and byte buffers whose sizes it checks against the
header, so a worker running hostile code cannot make the parent execute anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from multiprocessing import BufferTooShort
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from cudasmith.harness.wire.fields import JsonObject
from cudasmith.jsontypes import JsonDict

if TYPE_CHECKING:
    import torch

# The dtypes a tensor may have on the wire, by name ('float32' for torch.float32); anything else is
# refused. Names, not torch's dtypes: a process that only starts workers and reads their JSON (a build
# ahead) never imports torch for them (wire_dtypes() makes the map where tensors travel).
WIRE_DTYPE_NAMES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "complex128",
)
# A header is small (configs, timings, reasons); a bigger one is a protocol violation.
MAX_HEADER_BYTES = 8 * 1024 * 1024
# One message's tensors together; outputs larger than this are refused rather than buffered.
MAX_TENSOR_BYTES = 32 * 1024**3


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


@cache
def wire_dtypes() -> dict[str, torch.dtype]:
    """torch's dtype of each name in WIRE_DTYPE_NAMES."""
    import torch

    return {name: getattr(torch, name) for name in WIRE_DTYPE_NAMES}


def dtype_name(dtype: torch.dtype) -> str:
    """'float32' for torch.float32."""
    return str(dtype).removeprefix("torch.")


def tensor_spec(tensor: torch.Tensor) -> JsonDict:
    """What the header says of one tensor."""
    return {"dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape)}


def send(conn: Connection, header: JsonObject, tensors: Sequence[torch.Tensor] = ()) -> None:
    """Send one message; tensors may live on any device (they are copied to host memory first)."""
    import torch

    payloads = []
    specs = []
    for tensor in tensors:
        host = tensor.detach().to("cpu").contiguous()
        specs.append(tensor_spec(host))
        # The array's buffer, not a copy of it (.data: a memoryview, a buffer to every Python's stubs).
        payloads.append(host.reshape(-1).view(torch.uint8).numpy().data if host.numel() else b"")
    conn.send_bytes(json.dumps({**header, "tensors": specs}).encode())
    for payload in payloads:
        conn.send_bytes(payload)


def _expected_bytes(spec: JsonObject) -> tuple[torch.dtype, list[int], int]:
    import torch

    dtype = wire_dtypes().get(spec.get("dtype"))  # type: ignore[arg-type]
    shape = spec.get("shape")
    if dtype is None:
        raise ProtocolError(f"tensor dtype {spec.get('dtype')!r} is not allowed on the wire")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ProtocolError(f"bad tensor shape {shape!r}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    return dtype, shape, math.prod(shape) * itemsize


def receive(conn: Connection) -> tuple[JsonObject, list[torch.Tensor]]:
    """Receive one message; raises ProtocolError on anything malformed and EOFError when the peer is gone."""
    raw = conn.recv_bytes(MAX_HEADER_BYTES)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ProtocolError("a message header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("tensors", []), list):
        raise ProtocolError("a message header is not a JSON object with a tensor list")
    specs = [_expected_bytes(spec) for spec in header.pop("tensors", [])]
    if sum(nbytes for _, _, nbytes in specs) > MAX_TENSOR_BYTES:
        raise ProtocolError(f"a message announces more than {MAX_TENSOR_BYTES} bytes of tensors")
    tensors = []
    for dtype, shape, nbytes in specs:
        buffer = bytearray(nbytes)
        try:
            received = conn.recv_bytes_into(buffer) if nbytes else len(conn.recv_bytes(1))
        except (BufferTooShort, OSError):
            raise ProtocolError(
                f"a tensor carried more than the {nbytes} bytes its header announced"
            ) from None
        if received != nbytes:
            raise ProtocolError(f"a tensor announced {nbytes} bytes and carried {received}")
        tensors.append(_tensor(buffer, dtype, shape))
    return header, tensors


def _tensor(buffer: bytearray, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    import torch

    if buffer:
        return torch.frombuffer(buffer, dtype=torch.uint8).view(dtype).reshape(shape)
    return torch.empty(shape, dtype=dtype)

"""The wire format between parent and workers: tensors survive, garbage is refused."""

from __future__ import annotations

import json
from multiprocessing import Pipe

import pytest
import torch

from cudasmith.harness.wire import protocol


def test_tensors_of_every_wire_dtype_round_trip() -> None:
    sender, receiver = Pipe()
    tensors = [torch.randn(3, 5).to(getattr(torch, name)) for name in protocol.WIRE_DTYPE_NAMES]
    tensors.append(torch.empty(0, 4))
    tensors.append(torch.tensor(2.5))
    protocol.send(sender, {"ok": True, "note": "x"}, tensors)
    header, received = protocol.receive(receiver)
    assert header == {"ok": True, "note": "x"}
    for sent, got in zip(tensors, received, strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert torch.equal(got, sent)


def test_non_contiguous_tensors_are_sent_by_value() -> None:
    sender, receiver = Pipe()
    base = torch.arange(12.0).reshape(3, 4)
    protocol.send(sender, {}, [base.t()])
    _, (got,) = protocol.receive(receiver)
    assert torch.equal(got, base.t())


@pytest.mark.parametrize(
    "frames",
    [
        [b"not json"],
        [json.dumps({"tensors": [{"dtype": "object", "shape": [1]}]}).encode()],
        [json.dumps({"tensors": [{"dtype": "float32", "shape": [-1]}]}).encode()],
        [json.dumps({"tensors": [{"dtype": "float32", "shape": [2]}]}).encode(), b"\x00" * 12],
        [json.dumps({"tensors": [{"dtype": "float32", "shape": [2**40]}]}).encode()],
    ],
)
def test_malformed_messages_are_refused(frames: list[bytes]) -> None:
    sender, receiver = Pipe()
    for frame in frames:
        sender.send_bytes(frame)
    with pytest.raises(protocol.ProtocolError):
        protocol.receive(receiver)

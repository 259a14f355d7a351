"""Outputs through shared memory: copied exactly, and a forged reference refused, never followed."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

from cudasmith.harness.wire.outputs import OutputRef
from cudasmith.harness.wire.shared_memory import shared_memory_folder
from cudasmith.harness.wire.transfer import (
    Exporter,
    TransferError,
    import_outputs,
    shared_memory_available,
    sweep_shared,
)

pytestmark = pytest.mark.skipif(not shared_memory_available(), reason="no writable /dev/shm here")


def test_outputs_arrive_bit_for_bit_and_the_arena_goes_with_the_worker() -> None:
    exporter = Exporter("t" + os.urandom(4).hex())
    tensors = [torch.randn(3, 5), torch.tensor([float("nan"), -0.0]), torch.arange(7, dtype=torch.int64),
               torch.ones(2, dtype=torch.bool), torch.empty(0, 4)]  # fmt: skip
    references = exporter.export([*tensors[:-1], tensors[-1]])
    copies = import_outputs(references, exporter.token, "cpu")
    for got, sent in zip(copies, tensors, strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert torch.equal(got.reshape(-1).view(torch.uint8), sent.contiguous().reshape(-1).view(torch.uint8))
    exporter.release()
    files = list(shared_memory_folder(exporter.token).iterdir())
    assert [file.name for file in files] == [f"cudasmith-{exporter.token}-arena"], "one file, kept for reuse"
    sweep_shared(exporter.token)
    assert not shared_memory_folder(exporter.token).exists()


def test_outputs_kept_in_shared_memory_are_read_where_they_lie_and_their_memory_reused() -> None:
    """A timed call's outputs are copied once, into shared memory (Exporter.shared): the judge's worker
    reads them there. Once released, the next request carves the same memory again: its pages are not made
    and let go of again for every output."""
    exporter = Exporter("t" + os.urandom(4).hex())
    output = torch.randn(5, 3)
    kept, dropped = exporter.shared(output), exporter.shared(output)
    kept.copy_(output)
    (reference,) = exporter.export([kept])
    assert reference.kind == "shm" and dropped.shape == output.shape
    (copy,) = import_outputs([reference], exporter.token, "cpu")
    assert torch.equal(copy, output)
    exporter.release()
    again = torch.randn(5, 3)
    (reused,) = exporter.export([again])
    assert reused.offset == reference.offset and reused.name == reference.name
    (copy,) = import_outputs([reused], exporter.token, "cpu")
    assert torch.equal(copy, again)
    exporter.release()
    sweep_shared(exporter.token)


def test_an_arena_that_grows_leaves_what_was_carved_in_place() -> None:
    """Outputs carved before the arena grows keep their memory and their contents: each growth is a mapping
    of its own, and no output straddles two."""
    exporter = Exporter("t" + os.urandom(4).hex())
    outputs = [torch.randn(300_000) for _ in range(6)]  # 1.2 MB each: the arena grows several times
    kept = [exporter.shared(output) for output in outputs]
    for copy, output in zip(kept, outputs, strict=True):
        copy.copy_(output)
    references = exporter.export(kept)
    assert len({reference.offset for reference in references}) == len(outputs)
    for got, sent in zip(import_outputs(references, exporter.token, "cpu"), outputs, strict=True):
        assert torch.equal(got, sent)
    exporter.release()
    sweep_shared(exporter.token)


def test_a_range_past_the_end_of_the_arena_is_refused() -> None:
    exporter = Exporter("t" + os.urandom(4).hex())
    (reference,) = exporter.export([torch.randn(8)])
    size = os.stat(shared_memory_folder(exporter.token) / reference.name).st_size
    with pytest.raises(TransferError, match="past the end"):
        import_outputs([replace(reference, offset=size - 16)], exporter.token, "cpu")
    exporter.release()
    sweep_shared(exporter.token)


def test_non_contiguous_outputs_are_made_contiguous() -> None:
    exporter = Exporter("t" + os.urandom(4).hex())
    view = torch.randn(4, 6).t()
    (copy,) = import_outputs(exporter.export([view]), exporter.token, "cpu")
    assert torch.equal(copy, view)
    exporter.release()


def test_a_reference_to_another_workers_file_is_refused() -> None:
    exporter = Exporter("t" + os.urandom(4).hex())
    references = exporter.export([torch.randn(8)])
    with pytest.raises(TransferError, match="not this worker's"):
        import_outputs(references, "someone-else", "cpu")
    with pytest.raises(TransferError, match="not this worker's"):
        import_outputs([replace(references[0], name="../etc/passwd")], exporter.token, "cpu")
    exporter.release()


def test_a_size_that_does_not_match_the_header_is_refused() -> None:
    exporter = Exporter("t" + os.urandom(4).hex())
    (reference,) = exporter.export([torch.randn(8)])
    with pytest.raises(TransferError, match="size does not match"):
        import_outputs([replace(reference, shape=[16])], exporter.token, "cpu")
    exporter.release()


def test_a_link_planted_in_place_of_an_output_is_not_followed(tmp_path: os.PathLike) -> None:
    token = "t" + os.urandom(4).hex()
    shared_memory_folder(token).mkdir()
    target = shared_memory_folder(token) / f"cudasmith-{token}-1"
    secret = os.path.join(str(tmp_path), "secret")
    with open(secret, "wb") as file:
        file.write(b"\0" * 32)
    os.symlink(secret, target)
    try:
        reference = OutputRef("float32", [8], "shm", 32, name=target.name)
        with pytest.raises(TransferError, match="cannot be opened"):
            import_outputs([reference], token, "cpu")
    finally:
        if target.is_symlink():
            target.unlink()
        sweep_shared(token)


def test_unknown_kinds_and_dtypes_are_refused() -> None:
    # (A reference that is not one at all never gets here: the judge reads replies by type, test_messages.py.)
    with pytest.raises(TransferError):
        import_outputs([OutputRef("float32", [1], "pickle")], "x", "cpu")  # type: ignore[arg-type]
    with pytest.raises(TransferError, match="dtype"):
        import_outputs([OutputRef("object", [1], "shm")], "x", "cpu")

"""Run-time detection of PyTorch compute operators inside a candidate's forward.

Every operator PyTorch executes passes through its dispatcher, however it was spelled in Python
(`torch.softmax`, `F.softmax`, `x.softmax`, `getattr(torch, "soft" + "max")`, `x @ y`) or reached
from C++ (`at::softmax` in a load_inline extension). A dispatch mode sees each one by its ATen name.
Allocation, views and copies are what a kernel needs from PyTorch; anything else is compute.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

# fmt: off
ALLOCATION = {
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
    "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like", "aten::new_ones",
    "aten::full", "aten::full_like", "aten::new_full", "aten::scalar_tensor", "aten::arange", "aten::fill_",
    "aten::zero_", "aten::resize_", "aten::lift_fresh", "aten::lift_fresh_copy",
}
VIEWS = {
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided",
    "aten::alias", "aten::expand", "aten::expand_as", "aten::view_as", "aten::reshape_as", "aten::permute",
    "aten::transpose", "aten::transpose_", "aten::t", "aten::t_", "aten::unsqueeze", "aten::unsqueeze_",
    "aten::squeeze", "aten::squeeze_", "aten::select", "aten::slice", "aten::narrow", "aten::unbind",
    "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::flatten", "aten::unflatten",
    "aten::diagonal", "aten::detach", "aten::detach_", "aten::view_as_real", "aten::view_as_complex",
    "aten::movedim", "aten::unfold", "aten::as_strided_",
}
COPIES = {
    "aten::copy_", "aten::clone", "aten::_to_copy", "aten::to", "aten::_copy_from", "aten::_copy_from_and_resize",
    "aten::contiguous", "aten::set_", "aten::record_stream", "aten::_local_scalar_dense", "aten::item",
    "aten::is_nonzero",
}
METADATA = {
    "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset", "aten::size",
    "aten::stride", "aten::dim", "aten::is_contiguous", "aten::is_same_size", "aten::is_pinned",
}
# fmt: on
ALLOWED = frozenset(ALLOCATION | VIEWS | COPIES | METADATA)


class OpRecorder(TorchDispatchMode):
    """Counts every ATen operator run while active, by name ('aten::_softmax')."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[func._schema.name] += 1
        return func(*args, **(kwargs or {}))

    def compute_ops(self, extra_allowed: frozenset[str] = frozenset()) -> Counter[str]:
        """Operators that are neither allocation, views, copies nor metadata (nor widened by policy)."""
        return Counter({name: n for name, n in self.counts.items() if name not in ALLOWED | extra_allowed})

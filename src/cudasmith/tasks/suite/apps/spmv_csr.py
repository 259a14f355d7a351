"""Sparse matrix times dense vector, y = A x, with A in CSR form, in float32.

Row offsets and column indices are int32, as in iterative solvers and graph analytics.

Row lengths follow a power law (a few rows with thousands of entries, most with a handful, 1/32 of the
rows empty), columns repeat within rows, and values and x are signed, so that cancellation happens.
The expert is cuSPARSE's SpMV through a PyTorch sparse CSR tensor.
"""

import warnings

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"rows": 1000, "per_row": 8},
    {"rows": 100_003, "per_row": 16},
    {"rows": 4_000_000, "per_row": 16},
]
HIDDEN_CONFIGS = [{"rows": range(240005, 375010), "per_row": 12}]


class Model(nn.Module):
    def forward(
        self, row_offsets: torch.Tensor, columns: torch.Tensor, values: torch.Tensor, x: torch.Tensor
    ) -> torch.Tensor:
        rows = row_offsets.numel() - 1
        row_of_entry = torch.repeat_interleave(
            torch.arange(rows, device=x.device),
            (row_offsets[1:] - row_offsets[:-1]).long(),
            output_size=columns.numel(),
        )
        products = values * x[columns.long()]
        return torch.zeros(rows, dtype=x.dtype, device=x.device).index_add_(0, row_of_entry, products)


class CuSPARSE(Model):
    """cuSPARSE's CSR SpMV (MKL's on the CPU) through a PyTorch sparse CSR tensor."""

    def forward(
        self, row_offsets: torch.Tensor, columns: torch.Tensor, values: torch.Tensor, x: torch.Tensor
    ) -> torch.Tensor:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            matrix = torch.sparse_csr_tensor(
                row_offsets,
                columns,
                values,
                size=(row_offsets.numel() - 1, x.numel()),
                check_invariants=False,
            )
            return matrix @ x


EXPERT = CuSPARSE


def get_inputs(rows: int = 1000, per_row: int = 8) -> list[torch.Tensor]:
    entries, filled = rows * per_row, rows - rows // 32
    ranks = torch.arange(rows + 1, dtype=torch.float64)
    rank_offsets = (entries * (ranks / filled).clamp(max=1.0) ** (1 / 3)).long()
    lengths = torch.empty(rows, dtype=torch.long)
    lengths[torch.randperm(rows)] = rank_offsets[1:] - rank_offsets[:-1]
    row_offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)])
    columns = torch.randint(0, rows, (entries,))
    return [row_offsets.int(), columns.int(), torch.randn(entries), torch.randn(rows)]


def get_init_inputs(rows: int = 1000, per_row: int = 8) -> list:
    return []


def flops(rows: int, per_row: int) -> int:
    return 2 * rows * per_row


def bytes_moved(rows: int, per_row: int) -> int:
    return 4 * ((rows + 1) + 2 * rows * per_row + 2 * rows)

"""One PageRank power iteration on a directed CSR graph, in float32.

Each vertex passes a damped share of its rank along its out-edges, vertices without out-edges spread
theirs over every vertex, and every vertex gets the teleport share (1 - damping) / n.

Graphs have power-law out-degrees (hubs with thousands of edges), repeated edges and 1/32 of the
vertices without out-edges; incoming ranks are skewed, not uniform, so the answer varies widely.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"vertices": 1000, "degree": 8},
    {"vertices": 100_003, "degree": 16},
    {"vertices": 4_000_000, "degree": 16},
]
HIDDEN_CONFIGS = [{"vertices": range(240005, 375010), "degree": 12}]
DAMPING = 0.85


class Model(nn.Module):
    def forward(self, row_offsets: torch.Tensor, columns: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor:
        vertices = ranks.numel()
        out_degree = (row_offsets[1:] - row_offsets[:-1]).long()
        edge_sources = torch.repeat_interleave(
            torch.arange(vertices, device=ranks.device), out_degree, output_size=columns.numel()
        )
        shares = ranks / out_degree.clamp(min=1)
        incoming = torch.zeros_like(ranks).index_add_(0, columns.long(), shares[edge_sources])
        dangling = torch.where(out_degree == 0, ranks, 0.0).sum()
        return (1.0 - DAMPING) / vertices + DAMPING * (incoming + dangling / vertices)


def random_graph(vertices: int, degree: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CSR row offsets and columns (int32) of a random directed graph, and a source vertex (int32, one
    element). Out-degrees follow a power law over randomly placed vertices, the last 1/32 of them
    without outgoing edges; targets are uniform over a random 31/32 of the vertices."""
    edges, senders = vertices * degree, vertices - vertices // 32
    ranks = torch.arange(vertices + 1, dtype=torch.float64)
    rank_offsets = (edges * (ranks / senders).clamp(max=1.0) ** (1 / 3)).long()
    by_rank = torch.randperm(vertices)
    lengths = torch.empty(vertices, dtype=torch.long)
    lengths[by_rank] = rank_offsets[1:] - rank_offsets[:-1]
    row_offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)])
    # Multiplying by a prime modulo the vertex count scatters the targets' range over every vertex.
    targets = torch.randint(0, senders, (edges,)) * (2**31 - 1) % vertices
    return row_offsets.int(), targets.int(), by_rank[vertices // 4 : vertices // 4 + 1].int()


def get_inputs(vertices: int = 1000, degree: int = 8) -> list[torch.Tensor]:
    row_offsets, columns, _ = random_graph(vertices, degree)
    ranks = torch.rand(vertices) ** 4
    return [row_offsets, columns, ranks / ranks.sum()]


def get_init_inputs(vertices: int = 1000, degree: int = 8) -> list:
    return []


def flops(vertices: int, degree: int) -> int:
    return 2 * vertices * degree + 6 * vertices


def bytes_moved(vertices: int, degree: int) -> int:
    return 4 * ((vertices + 1) + vertices * degree + 2 * vertices)

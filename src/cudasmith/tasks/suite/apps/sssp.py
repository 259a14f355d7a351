"""Single-source shortest path lengths on a directed CSR graph with float32 weights (+inf if unreached).

Graphs have power-law out-degrees, self-loops and repeated edges (with different weights), and 1/32 of
the vertices without incoming edges; weights are uniform in [1, 100). The validator checks the
distances themselves: the source at 0, the same vertices reached as the reference, every other
reached vertex at the length of its best incoming path (the Bellman equation, to float32 rounding), and
each within 1e-5 relative of the reference.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"vertices": 1000, "degree": 8},
    {"vertices": 100_003, "degree": 16},
    {"vertices": 1_000_000, "degree": 16},
]
HIDDEN_CONFIGS = [{"vertices": range(240005, 375010), "degree": 12}]
# A distance is the sum of float32 weights along a path; summing in another order or along another
# equally short path moves it by a few float32 roundings per edge.
BELLMAN_RTOL, REFERENCE_RTOL = 1e-6, 1e-5


class Model(nn.Module):
    def forward(
        self, row_offsets: torch.Tensor, columns: torch.Tensor, weights: torch.Tensor, source: torch.Tensor
    ) -> torch.Tensor:
        vertices = row_offsets.numel() - 1
        edge_sources = torch.repeat_interleave(
            torch.arange(vertices, device=columns.device),
            (row_offsets[1:] - row_offsets[:-1]).long(),
            output_size=columns.numel(),
        )
        targets = columns.long()
        distance = torch.full((vertices,), float("inf"), dtype=weights.dtype, device=weights.device)
        distance[source.long()] = 0.0
        changed = torch.zeros(vertices, dtype=torch.bool, device=weights.device)
        changed[source.long()] = True
        while bool(changed.any()):
            active = changed[edge_sources]
            offers = distance[edge_sources[active]] + weights[active]
            relaxed = distance.scatter_reduce(0, targets[active], offers, "amin")
            changed = relaxed < distance
            distance = relaxed
        return distance


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
    row_offsets, columns, source = random_graph(vertices, degree)
    weights = 1.0 + 99.0 * torch.rand(columns.numel())
    return [row_offsets, columns, weights, source]


def get_init_inputs(vertices: int = 1000, degree: int = 8) -> list:
    return []


def validate(inputs: list[torch.Tensor], output: torch.Tensor, reference: torch.Tensor) -> str | None:
    row_offsets, columns, weights, source_tensor = inputs
    distance, expected = output.double(), reference.double()
    vertices, source = distance.numel(), int(source_tensor)
    if bool(torch.isnan(distance).any()):
        return f"vertex {int(torch.nonzero(torch.isnan(distance))[0])} has distance NaN"
    if float(distance[source]) != 0.0:
        return f"the source (vertex {source}) has distance {float(distance[source])}, expected 0"
    reached = torch.isfinite(distance)
    misjudged = reached != torch.isfinite(expected)
    if bool(misjudged.any()):
        vertex = int(torch.nonzero(misjudged)[0])
        state = "reachable" if bool(torch.isfinite(expected[vertex])) else "unreachable"
        return f"vertex {vertex} is {state}, but its distance is {float(distance[vertex])}"
    if bool((distance < 0).any()):
        return f"vertex {int(torch.nonzero(distance < 0)[0])} has a negative distance"
    edge_sources = torch.repeat_interleave(
        torch.arange(vertices), (row_offsets[1:] - row_offsets[:-1]).long()
    )
    offers = distance[edge_sources] + weights.double()
    best = torch.full((vertices,), float("inf"), dtype=torch.float64).scatter_reduce(
        0, columns.long(), offers, "amin"
    )
    others = torch.arange(vertices) != source
    unexplained = others & reached & ((distance - best).abs() > BELLMAN_RTOL * best)
    if bool(unexplained.any()):
        vertex = int(torch.nonzero(unexplained)[0])
        return (
            f"vertex {vertex} has distance {float(distance[vertex]):.9g}, but its best incoming path "
            f"has length {float(best[vertex]):.9g}"
        )
    off = reached & ((distance - expected).abs() > REFERENCE_RTOL * expected)
    if bool(off.any()):
        vertex = int(torch.nonzero(off)[0])
        return f"vertex {vertex} has distance {float(distance[vertex]):.9g}, expected {float(expected[vertex]):.9g}"
    return None


def bytes_moved(vertices: int, degree: int) -> int:
    return 4 * ((vertices + 1) + 2 * vertices * degree + 1 + vertices)

"""Breadth-first search distances from a source on a directed CSR graph (int32, -1 if unreached).

The output is the number of edges on a shortest path from the source to every vertex.

Graphs have power-law out-degrees (a few hubs with thousands of edges, many vertices with few or none),
self-loops and repeated edges, and 1/32 of the vertices without incoming edges, so some vertices are
unreachable. The validator checks the distances themselves, not their agreement with the reference: the
source at 0, every other reached vertex exactly one step after its nearest reached predecessor, and
unreached vertices without a reached predecessor. Only true BFS distances satisfy all three.
"""

import torch
from torch import nn

DTYPE = "int32"
CONFIGS = [
    {"vertices": 1000, "degree": 8},
    {"vertices": 100_003, "degree": 16},
    {"vertices": 1_000_000, "degree": 16},
]
HIDDEN_CONFIGS = [{"vertices": range(240005, 375010), "degree": 12}]
UNREACHED = -1


class Model(nn.Module):
    def forward(self, row_offsets: torch.Tensor, columns: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        vertices = row_offsets.numel() - 1
        edge_sources = torch.repeat_interleave(
            torch.arange(vertices, device=columns.device),
            (row_offsets[1:] - row_offsets[:-1]).long(),
            output_size=columns.numel(),
        )
        targets = columns.long()
        distance = torch.full((vertices,), UNREACHED, dtype=torch.int32, device=columns.device)
        frontier = torch.zeros(vertices, dtype=torch.bool, device=columns.device)
        distance[source.long()] = 0
        frontier[source.long()] = True
        level = 0
        while bool(frontier.any()):
            level += 1
            touched = torch.zeros_like(frontier)
            touched[targets[frontier[edge_sources]]] = True
            frontier = touched & (distance == UNREACHED)
            distance[frontier] = level
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
    return list(random_graph(vertices, degree))


def get_init_inputs(vertices: int = 1000, degree: int = 8) -> list:
    return []


def validate(inputs: list[torch.Tensor], output: torch.Tensor, reference: torch.Tensor) -> str | None:
    row_offsets, columns, source_tensor = inputs
    distance = output.long()
    vertices, source = distance.numel(), int(source_tensor)
    if int(distance[source]) != 0:
        return f"the source (vertex {source}) has distance {int(distance[source])}, expected 0"
    if bool((distance < UNREACHED).any()):
        vertex = int(torch.nonzero(distance < UNREACHED)[0])
        return (
            f"vertex {vertex} has distance {int(distance[vertex])}; distances are >= 0, or -1 for unreached"
        )
    edge_sources = torch.repeat_interleave(
        torch.arange(vertices), (row_offsets[1:] - row_offsets[:-1]).long()
    )
    reached = distance >= 0
    from_reached = reached[edge_sources]
    never = vertices + 1
    nearest = torch.full((vertices,), never, dtype=torch.long).scatter_reduce(
        0, columns.long()[from_reached], distance[edge_sources[from_reached]] + 1, "amin"
    )
    others = torch.arange(vertices) != source
    unexplained = others & reached & (nearest == never)
    if bool(unexplained.any()):
        vertex = int(torch.nonzero(unexplained)[0])
        return f"vertex {vertex} has distance {int(distance[vertex])} but no reached vertex has an edge to it"
    missed = others & ~reached & (nearest < never)
    if bool(missed.any()):
        vertex = int(torch.nonzero(missed)[0])
        return f"vertex {vertex} is marked unreached, but a vertex at distance {int(nearest[vertex]) - 1} has an edge to it"
    wrong = others & reached & (distance != nearest)
    if bool(wrong.any()):
        vertex = int(torch.nonzero(wrong)[0])
        return (
            f"vertex {vertex} has distance {int(distance[vertex])}, but its nearest reached predecessor "
            f"is at distance {int(nearest[vertex]) - 1}"
        )
    return None


def bytes_moved(vertices: int, degree: int) -> int:
    return 4 * ((vertices + 1) + vertices * degree + 1 + vertices)

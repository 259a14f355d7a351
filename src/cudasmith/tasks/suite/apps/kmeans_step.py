"""One Lloyd iteration of k-means: nearest-centroid assignment and centroid update, in float32.

Assign every point to its nearest centroid (squared Euclidean distance; int64 indices), then move each
centroid to the mean of its points; a centroid that gets no point stays where it was.

Points come from Gaussian blobs; the centroids are points drawn from the data, some duplicated (every
point equidistant from two of them: either is a right answer) and some far from all data (they get no
point). The validator accepts any assignment whose chosen centroid is as near as the reference's within
float32 rounding of the distances, and checks each new centroid against the mean of the points the
candidate assigned to it.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"points": 1000, "dim": 16, "clusters": 10},
    {"points": 100_003, "dim": 64, "clusters": 256},
    {"points": 1_000_000, "dim": 128, "clusters": 1024},
]
HIDDEN_CONFIGS = [{"points": range(160002, 250005), "dim": 33, "clusters": 100}]
# Points whose distances to every centroid are held in memory at once in the reference.
CHUNK = 65536
# A distance expanded as |x|² − 2x·c + |c|² in float32 is off by a few float32 roundings of |x|² + |c|².
DISTANCE_SLACK = 1e-5
# The mean of a cluster in float32 is off by float32 roundings of the sum of its points' magnitudes.
MEAN_RTOL = 1e-4


class Model(nn.Module):
    def forward(self, points: torch.Tensor, centroids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        centroid_norms = centroids.square().sum(1)
        assignment = torch.cat(
            [(centroid_norms - 2.0 * chunk @ centroids.t()).argmin(dim=1) for chunk in points.split(CHUNK)]
        )
        sums = torch.zeros_like(centroids).index_add_(0, assignment, points)
        counts = torch.zeros_like(centroid_norms).index_add_(0, assignment, torch.ones_like(points[:, 0]))
        means = sums / counts.clamp(min=1.0).unsqueeze(1)
        return assignment, torch.where(counts.unsqueeze(1) > 0, means, centroids)


def get_inputs(points: int = 1000, dim: int = 16, clusters: int = 10) -> list[torch.Tensor]:
    blobs = max(2, clusters // 2)
    centres = torch.randn(blobs, dim) * 4.0
    data = (
        centres[torch.randint(0, blobs, (points,))] + torch.randn(points, dim) * torch.rand(points, 1) * 2.0
    )
    centroids = data[torch.randperm(points)[:clusters]].clone()
    centroids[1::7] = centroids[0:-1:7][: centroids[1::7].shape[0]]
    centroids[2::5] = 1000.0 + torch.randn_like(centroids[2::5])
    return [data, centroids]


def get_init_inputs(points: int = 1000, dim: int = 16, clusters: int = 10) -> list:
    return []


def validate(
    inputs: list[torch.Tensor],
    output: tuple[torch.Tensor, torch.Tensor],
    reference: tuple[torch.Tensor, torch.Tensor],
) -> str | None:
    points, centroids = inputs[0], inputs[1].double()
    assignment, new_centroids = output
    clusters = centroids.shape[0]
    if bool((assignment < 0).any() | (assignment >= clusters).any()):
        index = int(torch.nonzero((assignment < 0) | (assignment >= clusters))[0])
        return f"point {index} is assigned to centroid {int(assignment[index])}, not one of 0..{clusters - 1}"
    sums, magnitudes = torch.zeros_like(centroids), torch.zeros_like(centroids)
    counts = torch.zeros(clusters, dtype=torch.float64)
    for start in range(0, len(points), CHUNK):
        chunk = points[start : start + CHUNK].double()
        chosen_index, best_index = assignment[start : start + CHUNK], reference[0][start : start + CHUNK]
        chosen = (chunk - centroids[chosen_index]).square().sum(1)
        nearest = (chunk - centroids[best_index]).square().sum(1)
        slack = DISTANCE_SLACK * (chunk.square().sum(1) + centroids[best_index].square().sum(1))
        farther = chosen > nearest + slack
        if bool(farther.any()):
            index = int(torch.nonzero(farther)[0])
            return (
                f"point {start + index} is assigned to centroid {int(chosen_index[index])} at squared distance "
                f"{float(chosen[index]):.6g}; centroid {int(best_index[index])} is at {float(nearest[index]):.6g}"
            )
        sums.index_add_(0, chosen_index, chunk)
        magnitudes.index_add_(0, chosen_index, chunk.abs())
        counts.index_add_(0, chosen_index, torch.ones(len(chunk), dtype=torch.float64))
    filled = counts.unsqueeze(1) > 0
    expected = torch.where(filled, sums / counts.clamp(min=1.0).unsqueeze(1), centroids)
    allowed = torch.where(filled, MEAN_RTOL * magnitudes / counts.clamp(min=1.0).unsqueeze(1), 0.0)
    off = (new_centroids.double() - expected).abs() > allowed
    if bool(off.any()):
        cluster, coordinate = (int(i) for i in torch.nonzero(off)[0])
        what = (
            f"the mean of its {int(counts[cluster])} points"
            if bool(filled[cluster])
            else "unchanged (no points)"
        )
        return (
            f"centroid {cluster} coordinate {coordinate} is {float(new_centroids[cluster, coordinate]):.6g}; "
            f"expected {float(expected[cluster, coordinate]):.6g}, {what}"
        )
    return None

"""Semantic validators refuse near-misses (one distance off, one pair broken, one bit too wide) and accept
every right answer, not only the reference's (ties, another sort order, another rounding)."""

from __future__ import annotations

from typing import Any

import torch
from test_suite import case


def _validate(name: str, output: Any) -> str | None:
    c = case(name)
    reference = c.outputs[0] if len(c.outputs) == 1 else tuple(c.outputs)
    return c.module.validate(c.inputs, output, reference)


def test_bfs_refuses_one_wrong_distance_and_accepts_the_truth() -> None:
    (distance,) = case("apps/bfs").outputs
    assert _validate("apps/bfs", distance.clone()) is None
    far = int(torch.nonzero(distance == distance.max())[0])
    for wrong in (distance[far] + 1, distance[far] - 1, -1):
        answer = distance.clone()
        answer[far] = wrong
        assert _validate("apps/bfs", answer) is not None, f"distance {int(wrong)} accepted"
    unreached = int(torch.nonzero(distance == -1)[0])
    answer = distance.clone()
    answer[unreached] = int(distance.max()) + 1
    assert _validate("apps/bfs", answer) is not None


def test_sssp_refuses_a_small_error_and_accepts_float64_distances() -> None:
    c = case("apps/sssp")
    (distance,) = c.outputs
    assert _validate("apps/sssp", c.outputs64[0].to(torch.float32)) is None
    reached = torch.nonzero(torch.isfinite(distance) & (distance > 0)).squeeze(1)
    for scale in (1.001, 0.999):
        answer = distance.clone()
        answer[reached[-1]] *= scale
        assert _validate("apps/sssp", answer) is not None
    answer = distance.clone()
    answer[reached[0]] = float("inf")
    assert _validate("apps/sssp", answer) is not None


def test_kmeans_accepts_a_tied_centroid_and_refuses_a_farther_one() -> None:
    c = case("apps/kmeans_step")
    points, centroids = c.inputs
    assignment, new_centroids = c.outputs
    duplicates = [
        (i, j)
        for i in range(len(centroids))
        for j in range(len(centroids))
        if i != j and torch.equal(centroids[i], centroids[j])
    ]
    assert duplicates, "the inputs should hold duplicated centroids"
    first, second = duplicates[0]
    moved = assignment.clone()
    moved[assignment == first] = second
    sums = torch.zeros_like(centroids).index_add_(0, moved, points)
    counts = torch.zeros(len(centroids)).index_add_(0, moved, torch.ones(len(points)))
    means = torch.where(counts.unsqueeze(1) > 0, sums / counts.clamp(min=1).unsqueeze(1), centroids)
    assert _validate("apps/kmeans_step", (moved, means)) is None
    farther = assignment.clone()
    distances = torch.cdist(points[:1].double(), centroids.double())[0]
    farther[0] = int(distances.argmax())
    assert _validate("apps/kmeans_step", (farther, new_centroids)) is not None
    shifted = new_centroids.clone()
    shifted[int(assignment[0])] += 1e-2
    assert _validate("apps/kmeans_step", (assignment, shifted)) is not None


def test_sort_pairs_accepts_a_stable_sort_and_refuses_broken_pairs() -> None:
    keys, values = case("apps/sort_pairs").inputs
    sorted_keys, order = torch.sort(keys, stable=True)
    assert _validate("apps/sort_pairs", (sorted_keys, values[order])) is None
    swapped = values[order].clone()
    first, last = 0, len(swapped) - 1
    swapped[[first, last]] = swapped[[last, first]]
    assert _validate("apps/sort_pairs", (sorted_keys, swapped)) is not None
    repeated = values[order].clone()
    repeated[1] = repeated[0]
    assert _validate("apps/sort_pairs", (sorted_keys, repeated)) is not None


def test_compression_is_decoded_and_its_widths_and_size_checked() -> None:
    c = case("apps/compress_lossy")
    codes, widths, size = c.outputs
    field, bound = c.inputs
    other = c.module.Model()(field.double(), bound)
    assert _validate("apps/compress_lossy", (other[0].int(), other[1].int(), other[2])) is None
    nudged = codes.clone()
    nudged.view(-1)[7] += 2
    assert "decodes to" in (_validate("apps/compress_lossy", (nudged, widths, size)) or "")
    assert "needs only" in (_validate("apps/compress_lossy", (codes, widths + 1, size)) or "")
    assert "compressed size" in (_validate("apps/compress_lossy", (codes, widths, size - 1)) or "")


def test_large_sort_must_be_exact() -> None:
    (expected,) = case("challenge/sort_large").outputs
    distinct = int(torch.nonzero(expected[1:] != expected[:-1])[len(expected) // 3])
    answer = expected.clone()
    answer[[distinct, distinct + 1]] = answer[[distinct + 1, distinct]]
    assert _validate("challenge/sort_large", answer) is not None


def test_smith_waterman_matches_the_textbook_recurrence() -> None:
    c = case("apps/smith_waterman")
    reads, windows, substitution = c.inputs
    gap_open, gap_extend = c.module.GAP_OPEN, c.module.GAP_EXTEND
    table = substitution.tolist()
    never = -(10**9)
    scores = []
    for read, window in zip(reads.tolist(), windows.tolist(), strict=True):
        h = [[0] * (len(window) + 1) for _ in range(len(read) + 1)]
        e = [[never] * (len(window) + 1) for _ in range(len(read) + 1)]
        f = [[never] * (len(window) + 1) for _ in range(len(read) + 1)]
        for i in range(1, len(read) + 1):
            for j in range(1, len(window) + 1):
                e[i][j] = max(h[i][j - 1] - gap_open, e[i][j - 1] - gap_extend)
                f[i][j] = max(h[i - 1][j] - gap_open, f[i - 1][j] - gap_extend)
                match = table[read[i - 1]][window[j - 1]]
                h[i][j] = max(0, h[i - 1][j - 1] + match, e[i][j], f[i][j])
        scores.append(max(map(max, h)))
    assert c.outputs[0].tolist() == scores

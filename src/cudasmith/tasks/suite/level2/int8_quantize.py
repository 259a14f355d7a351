"""Per-token symmetric int8 quantisation of bfloat16 activations: q = round(x / s), s = max|x| / 127 per row.

Returns (q in int8, s in float32 with shape (tokens, 1)), as for int8 GEMM inputs (SmoothQuant, LLM.int8).
Activations have outlier channels 20 times larger than the rest, as in LLMs. The validator accepts any
rounding of values that sit on a half-integer within float32 error (x / s and x · (1 / s) may differ
there): each q must be a nearest integer to x / s for the returned s, and s must be max|x| / 127.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 7, "hidden": 1000},
    {"tokens": 4096, "hidden": 4096},
    {"tokens": 16384, "hidden": 14336},
]
HIDDEN_CONFIGS = [{"tokens": range(799, 1250), "hidden": 5120}]
# float32 rounding of max|x| / 127.
SCALE_RTOL = 1e-6
# How far past a half-integer x / s may round the other way (float32 error of the division, ≤ 127 · 2⁻²³).
TIE_SLACK = 1e-3


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # float32 for bfloat16 inputs; a float64 run stays in float64.
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        scale = h.abs().amax(dim=-1, keepdim=True).clamp_min(1e-8) / 127.0
        return torch.round(h / scale).clamp(-127, 127).to(torch.int8), scale


def get_inputs(tokens: int = 7, hidden: int = 1000) -> list[torch.Tensor]:
    outliers = torch.randperm(hidden)[: max(1, hidden // 200)]
    x = torch.randn(tokens, hidden)
    x[:, outliers] *= 20.0
    return [x.to(torch.bfloat16)]


def get_init_inputs(tokens: int = 7, hidden: int = 1000) -> list:
    return []


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor], reference: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    (x,) = inputs
    q, scale = output
    magnitudes = x.float().abs()
    true_scale = magnitudes.amax(dim=-1, keepdim=True).double() / 127.0
    wrong = (scale.double() - true_scale).abs() > SCALE_RTOL * true_scale
    if wrong.any():
        row = int(wrong.nonzero()[0, 0])
        return (
            f"{int(wrong.sum())} of {len(wrong)} scales are wrong (first: row {row}: expected "
            f"{float(true_scale[row, 0]):.6g}, got {float(scale[row, 0]):.6g})"
        )
    # In float32, x / s is off by at most 127 · 2⁻²³, far inside TIE_SLACK.
    target = x.float() / scale.float()
    wrong = (q.float() - target).abs() > 0.5 + TIE_SLACK
    if wrong.any():
        row, column = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} values are not rounded to a nearest integer (first at "
            f"[{row}, {column}]: x / s = {float(target[row, column]):.4f}, got {int(q[row, column])})"
        )
    return None


def flops(tokens: int, hidden: int) -> int:
    # The absolute maximum, the division and the rounding per element.
    return 3 * tokens * hidden

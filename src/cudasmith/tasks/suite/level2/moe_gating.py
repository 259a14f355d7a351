"""Mixture-of-experts top-k routing in bfloat16: router logits, softmax, the k best experts and their weights.

Mixtral's and DeepSeek-MoE's gate: returns (weights renormalised over the chosen experts, in bfloat16;
expert indices, int64). The router weight is an input, as the validator recomputes the logits from it
in float64. Two experts whose logits differ by less than bfloat16 rounding may be picked either way,
so the validator accepts any k distinct experts whose logits are within that margin of the k largest,
in any order, with weights that renormalise the chosen experts' softmax.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 16, "hidden": 64, "experts": 8, "top_k": 2},
    {"tokens": 4096, "hidden": 4096, "experts": 8, "top_k": 2},
    {"tokens": 16384, "hidden": 2048, "experts": 64, "top_k": 6},
]
HIDDEN_CONFIGS = [{"tokens": range(800, 1253), "hidden": 2048, "experts": 60, "top_k": 4}]
# Bfloat16 logits carry up to half an ulp (2⁻⁸ relative) of error each, so two of them may swap order when
# they differ by less than 2⁻⁷ of the largest |logit|; this margin leaves room for that and the sum order.
NEAR_TIE = 1.5e-2
# The weights depend on bfloat16 logits (a difference of two logits is off by up to 2⁻⁷ of the largest)
# and are rounded to bfloat16 themselves.
WEIGHT_RTOL, WEIGHT_ATOL = 5e-2, 1e-2


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, hidden: torch.Tensor, router_weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = torch.matmul(hidden, router_weight.t())
        # float32 softmax for bfloat16 logits; a float64 run stays in float64.
        probs = torch.softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(hidden.dtype), experts


def get_inputs(tokens: int = 16, hidden: int = 64, experts: int = 8, top_k: int = 2) -> list[torch.Tensor]:
    x = torch.randn(tokens, hidden)
    router_weight = torch.randn(experts, hidden) * 2.0 * hidden**-0.5
    return [x.to(torch.bfloat16), router_weight.to(torch.bfloat16)]


def get_init_inputs(tokens: int = 16, hidden: int = 64, experts: int = 8, top_k: int = 2) -> list:
    return [top_k]


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor], reference: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    hidden, router_weight = inputs
    weights, experts = output
    logits = hidden.double() @ router_weight.double().t()
    n_experts, top_k = logits.shape[-1], experts.shape[-1]
    if ((experts < 0) | (experts >= n_experts)).any():
        return f"an expert index is outside [0, {n_experts})"
    ordered = experts.sort(dim=-1).values
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(dim=-1)
    if repeated.any():
        return f"{int(repeated.sum())} tokens name the same expert twice (first: token {int(repeated.nonzero()[0, 0])})"
    chosen = logits.gather(-1, experts)
    kth = logits.topk(top_k, dim=-1).values[:, -1:]
    margin = NEAR_TIE * logits.abs().amax(dim=-1, keepdim=True)
    outside = chosen < kth - margin
    if outside.any():
        token, place = outside.nonzero()[0].tolist()
        return (
            f"{int(outside.any(dim=-1).sum())} tokens are routed outside their top {top_k} (first: token "
            f"{token} to expert {int(experts[token, place])}, logit {float(chosen[token, place]):.4g}, "
            f"k-th largest {float(kth[token, 0]):.4g})"
        )
    expected = torch.softmax(chosen, dim=-1)
    wrong = (weights.double() - expected).abs() > WEIGHT_RTOL * expected + WEIGHT_ATOL
    if wrong.any():
        token, place = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} weights are wrong (first: token {token}, expert "
            f"{int(experts[token, place])}: expected {float(expected[token, place]):.4g}, "
            f"got {float(weights[token, place]):.4g})"
        )
    return None


def flops(tokens: int, hidden: int, experts: int, top_k: int) -> int:
    # The router GEMM, then the softmax (five operations per logit).
    return 2 * tokens * hidden * experts + 5 * tokens * experts


def bytes_moved(tokens: int, hidden: int, experts: int, top_k: int) -> int:
    return 2 * (tokens * hidden + experts * hidden) + (2 + 8) * tokens * top_k

"""Linear layer with bias followed by tanh-approximated GELU, in bfloat16: GPT-2's MLP up-projection.

gelu_tanh(x · Wᵀ + b). Weights have standard deviation 1/√in_features and the bias is random, so that
pre-activations spread over GELU's curved region as well as its tails.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 17, "in_features": 64, "out_features": 96},
    {"tokens": 8192, "in_features": 768, "out_features": 3072},
    {"tokens": 4096, "in_features": 4096, "out_features": 16384},
]
HIDDEN_CONFIGS = [{"tokens": range(80, 126), "in_features": 1600, "out_features": 6400}]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        nn.init.normal_(self.linear.weight, std=in_features**-0.5)
        nn.init.normal_(self.linear.bias, std=0.5)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x), approximate="tanh")


class Expert(Model):
    """On CUDA, cuBLASLt's GEMM with a fused bias-and-GELU epilogue (the tanh form) via
    torch._addmm_activation; elsewhere, where that op applies the exact GELU, the reference."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return super().forward(x)
        return torch._addmm_activation(self.linear.bias, x, self.linear.weight.t(), use_gelu=True)


EXPERT = Expert


def get_inputs(tokens: int = 17, in_features: int = 64, out_features: int = 96) -> list[torch.Tensor]:
    return [(torch.randn(tokens, in_features) * 2.0).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 17, in_features: int = 64, out_features: int = 96) -> list:
    return [in_features, out_features]


def flops(tokens: int, in_features: int, out_features: int) -> int:
    # The GEMM, then the bias add and eight operations of the tanh GELU per output.
    return 2 * tokens * in_features * out_features + 9 * tokens * out_features


def bytes_moved(tokens: int, in_features: int, out_features: int) -> int:
    return 2 * (tokens * in_features + in_features * out_features + out_features + tokens * out_features)

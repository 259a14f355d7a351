"""Weight-only int8 linear layer: bfloat16 activations times int8 weights dequantised with per-channel scales.

y = x · (W_q · s)ᵀ, W_q int8 (out_features × in_features), s one bfloat16 scale per output channel, as in
W8A16 inference. The reference dequantises the whole matrix first; a kernel should read the int8 weights
(half the bytes of bfloat16) and dequantise on the fly. Top sizes are a decode batch and a prefill
through Llama's MLP up-projection.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 5, "in_features": 64, "out_features": 100},
    {"tokens": 16, "in_features": 4096, "out_features": 14336},
    {"tokens": 4096, "in_features": 4096, "out_features": 14336},
]
HIDDEN_CONFIGS = [{"tokens": range(2, 5), "in_features": 1536, "out_features": 4103}]


class Model(nn.Module):
    # Buffers (register_buffer below), declared so that readers and type checkers see tensors.
    weight: torch.Tensor
    scale: torch.Tensor

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        weight = (torch.randn(out_features, in_features) * 42.0).round().clamp(-127, 127)
        self.register_buffer("weight", weight.to(torch.int8))
        self.register_buffer("scale", (torch.rand(out_features) * 0.01 + 0.002).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight.to(x.dtype) * self.scale[:, None]
        return torch.matmul(x, weight.t())


def get_inputs(tokens: int = 5, in_features: int = 64, out_features: int = 100) -> list[torch.Tensor]:
    return [torch.randn(tokens, in_features).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 5, in_features: int = 64, out_features: int = 100) -> list:
    return [in_features, out_features]


def flops(tokens: int, in_features: int, out_features: int) -> int:
    return 2 * tokens * in_features * out_features


def bytes_moved(tokens: int, in_features: int, out_features: int) -> int:
    return in_features * out_features + 2 * (out_features + tokens * in_features + tokens * out_features)

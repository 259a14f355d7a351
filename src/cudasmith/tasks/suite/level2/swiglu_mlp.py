"""SwiGLU feed-forward block in bfloat16, down(silu(gate(x)) · up(x)), as in Llama (no biases).

Three GEMMs and the gating between them. Weights are drawn with standard deviation 1/√fan_in, so that
the gate's pre-activations spread over SiLU's curved region as well as its tails.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 17, "hidden": 64, "intermediate": 176},
    {"tokens": 2048, "hidden": 4096, "intermediate": 14336},
    {"tokens": 8192, "hidden": 4096, "intermediate": 14336},
]
HIDDEN_CONFIGS = [{"tokens": range(61, 98), "hidden": 768, "intermediate": 2048}]


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)
        for layer in (self.gate, self.up, self.down):
            nn.init.normal_(layer.weight, std=layer.in_features**-0.5)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs(tokens: int = 17, hidden: int = 64, intermediate: int = 176) -> list[torch.Tensor]:
    return [(torch.randn(tokens, hidden) * 2.0).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 17, hidden: int = 64, intermediate: int = 176) -> list:
    return [hidden, intermediate]


def bytes_moved(tokens: int, hidden: int, intermediate: int) -> int:
    return 2 * (3 * hidden * intermediate + 2 * tokens * hidden)

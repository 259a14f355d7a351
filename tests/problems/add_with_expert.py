"""Vector sum with an EXPERT baseline (a class built like Model) and a config large enough to time."""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 100_003}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


class Expert(Model):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.add(a, b)


EXPERT = Expert


def get_inputs(n: int = 100_003) -> list[torch.Tensor]:
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n: int = 100_003) -> list:
    return []

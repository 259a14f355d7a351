"""A Mamba block with a sequential selective scan, in float32.

Input projection, causal depthwise convolution and SiLU, input-dependent step sizes Δ and state matrices
B and C, a selective scan over the sequence, a SiLU gate and the output projection.

Initialised as Mamba is (Δ log-uniform in [0.001, 0.1], A = -(1, 2, …, N) per channel), so that the
scan keeps long memory in some channels and forgets quickly in others.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 33, "dim": 32, "state": 8},
    {"batch": 8, "seq": 500, "dim": 384, "state": 16},
    {"batch": 4, "seq": 1024, "dim": 768, "state": 16},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "seq": range(160, 251), "dim": 256, "state": 16}]
EXPAND, CONV_WIDTH = 2, 4


class Model(nn.Module):
    def __init__(self, dim: int, state: int) -> None:
        super().__init__()
        inner, self.rank, self.state = EXPAND * dim, math.ceil(dim / 16), state
        self.in_proj = nn.Linear(dim, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, CONV_WIDTH, groups=inner, padding=CONV_WIDTH - 1)
        self.x_proj = nn.Linear(inner, self.rank + 2 * state, bias=False)
        self.dt_proj = nn.Linear(self.rank, inner)
        dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1, dtype=torch.float32)).repeat(inner, 1))
        self.D = nn.Parameter(torch.randn(inner))
        self.out_proj = nn.Linear(inner, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.shape[1]
        u, gate = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :seq]).transpose(1, 2)
        dt, B, C = self.x_proj(u).split([self.rank, self.state, self.state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        decay = torch.exp(dt.unsqueeze(-1) * -torch.exp(self.A_log))
        drive = (dt * u).unsqueeze(-1) * B.unsqueeze(2)
        h = x.new_zeros(decay.shape[0], decay.shape[2], self.state)
        outputs = []
        for t in range(seq):
            h = decay[:, t] * h + drive[:, t]
            outputs.append((h * C[:, t].unsqueeze(1)).sum(-1))
        y = torch.stack(outputs, dim=1) + u * self.D
        return self.out_proj(y * F.silu(gate))


def get_inputs(batch: int = 2, seq: int = 33, dim: int = 32, state: int = 8) -> list[torch.Tensor]:
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(batch: int = 2, seq: int = 33, dim: int = 32, state: int = 8) -> list:
    return [dim, state]

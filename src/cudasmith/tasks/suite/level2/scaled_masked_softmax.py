"""Scale, key-padding mask and softmax of float16 attention scores (Megatron's scaled_masked_softmax).

softmax(scale · x) over the last dimension with padded key positions set to −∞; the softmax is in
float32. Every sequence has its own number of valid keys (at least one, one sequence with none padded),
so masked columns must come out zero.
"""

import torch
from torch import nn

DTYPE = "float16"
CONFIGS = [
    {"batch": 2, "heads": 3, "seq": 65},
    {"batch": 16, "heads": 16, "seq": 512},
    {"batch": 4, "heads": 16, "seq": 2048},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "heads": 12, "seq": range(307, 481)}]


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        # float32 softmax for float16 inputs; a float64 run stays in float64.
        x = scores.to(torch.promote_types(scores.dtype, torch.float32)) * self.scale
        x = x.masked_fill(padding[:, None, None, :], float("-inf"))
        return torch.softmax(x, dim=-1).to(scores.dtype)


def get_inputs(batch: int = 2, heads: int = 3, seq: int = 65) -> list[torch.Tensor]:
    lengths = torch.randint(1, seq + 1, (batch,))
    lengths[torch.randint(0, batch, (1,))] = seq
    padding = torch.arange(seq) >= lengths[:, None]
    return [(torch.randn(batch, heads, seq, seq) * 30.0).to(torch.float16), padding]


def get_init_inputs(batch: int = 2, heads: int = 3, seq: int = 65) -> list:
    return [0.125]


def flops(batch: int, heads: int, seq: int) -> int:
    return 5 * batch * heads * seq * seq

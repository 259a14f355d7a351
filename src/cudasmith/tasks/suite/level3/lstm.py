"""A stacked LSTM over a batch of sequences, written out step by step, in float32.

Returns the last layer's outputs at every step and each layer's final hidden and cell states.

Inputs are scaled so that the gates visit both their linear and their saturated ranges.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 3, "seq": 17, "features": 32, "hidden": 48, "layers": 2},
    {"batch": 16, "seq": 100, "features": 300, "hidden": 500, "layers": 2},
    {"batch": 64, "seq": 256, "features": 512, "hidden": 1024, "layers": 2},
]
HIDDEN_CONFIGS = [{"batch": range(5, 10), "seq": range(61, 98), "features": 128, "hidden": 257, "layers": 3}]


class Model(nn.Module):
    def __init__(self, features: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch, seq, _ = x.shape
        final_h, final_c = [], []
        for layer in range(self.lstm.num_layers):
            w_ih, w_hh, b_ih, b_hh = (
                getattr(self.lstm, f"{name}_l{layer}")
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            )
            input_gates = x @ w_ih.t() + (b_ih + b_hh)
            h = x.new_zeros(batch, self.lstm.hidden_size)
            c = x.new_zeros(batch, self.lstm.hidden_size)
            steps = []
            for t in range(seq):
                i, f, g, o = (input_gates[:, t] + h @ w_hh.t()).chunk(4, dim=1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                steps.append(h)
            x = torch.stack(steps, dim=1)
            final_h.append(h)
            final_c.append(c)
        return x, torch.stack(final_h), torch.stack(final_c)


class CuDNN(Model):
    """cuDNN's fused LSTM through nn.LSTM, with the same weights."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        output, (h, c) = self.lstm(x)
        return output, h, c


EXPERT = CuDNN


def get_inputs(
    batch: int = 3, seq: int = 17, features: int = 32, hidden: int = 48, layers: int = 2
) -> list[torch.Tensor]:
    return [torch.randn(batch, seq, features) * 2.0]


def get_init_inputs(
    batch: int = 3, seq: int = 17, features: int = 32, hidden: int = 48, layers: int = 2
) -> list:
    return [features, hidden, layers]

"""Embedding lookup in bfloat16: rows of a (vocab, dim) table gathered for a (batch, seq) batch of token ids.

Ids repeat and include the first and the last row of the table. The top size is Llama-3.2-1B's
vocabulary.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"vocab": 1000, "dim": 64, "batch": 2, "seq": 33},
    {"vocab": 32000, "dim": 4096, "batch": 4, "seq": 2047},
    {"vocab": 128256, "dim": 2048, "batch": 8, "seq": 4096},
]
HIDDEN_CONFIGS = [{"vocab": 50257, "dim": 768, "batch": range(2, 5), "seq": range(800, 1251)}]


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim).to(torch.bfloat16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids)


def get_inputs(vocab: int = 1000, dim: int = 64, batch: int = 2, seq: int = 33) -> list[torch.Tensor]:
    ids = torch.randint(0, vocab, (batch, seq))
    ids.view(-1)[torch.randperm(batch * seq)[:2]] = torch.tensor([0, vocab - 1])
    return [ids]


def get_init_inputs(vocab: int = 1000, dim: int = 64, batch: int = 2, seq: int = 33) -> list:
    return [vocab, dim]


def bytes_moved(vocab: int, dim: int, batch: int, seq: int) -> int:
    # The ids, each distinct row they name read once (the expected count for uniform ids), the output.
    tokens = batch * seq
    rows_read = int(vocab * (1.0 - (1.0 - 1.0 / vocab) ** tokens))
    return 8 * tokens + 2 * dim * (rows_read + tokens)

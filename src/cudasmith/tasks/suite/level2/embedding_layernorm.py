"""BERT's embeddings in float32: word, position and token-type embeddings summed, then LayerNorm.

Token types mark two segments split at a random point per sequence; ids repeat and include the first
and last rows of the vocabulary; the norm's scale and shift are random.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 17, "vocab": 1000, "dim": 64},
    {"batch": 32, "seq": 512, "vocab": 30522, "dim": 768},
    {"batch": 64, "seq": 512, "vocab": 30522, "dim": 1024},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "seq": range(240, 376), "vocab": 50265, "dim": 768}]


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int, max_positions: int, eps: float = 1e-12) -> None:
        super().__init__()
        self.words = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_positions, dim)
        self.token_types = nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, ids: torch.Tensor, token_types: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.norm(self.words(ids) + self.positions(positions) + self.token_types(token_types))


def get_inputs(batch: int = 2, seq: int = 17, vocab: int = 1000, dim: int = 64) -> list[torch.Tensor]:
    ids = torch.randint(0, vocab, (batch, seq))
    ids.view(-1)[torch.randperm(batch * seq)[:2]] = torch.tensor([0, vocab - 1])
    splits = torch.randint(1, seq, (batch, 1))
    return [ids, (torch.arange(seq) >= splits).long()]


def get_init_inputs(batch: int = 2, seq: int = 17, vocab: int = 1000, dim: int = 64) -> list:
    return [vocab, dim, max(seq, 512)]


def flops(batch: int, seq: int, vocab: int, dim: int) -> int:
    # Two additions, then LayerNorm's eight operations per element.
    return 10 * batch * seq * dim


def bytes_moved(batch: int, seq: int, vocab: int, dim: int) -> int:
    # Ids and types; each distinct word row once (the expected count for uniform ids), the position
    # rows, both type rows, and the output.
    tokens = batch * seq
    word_rows = int(vocab * (1.0 - (1.0 - 1.0 / vocab) ** tokens))
    return 2 * 8 * tokens + 4 * dim * (word_rows + seq + 2 + tokens)

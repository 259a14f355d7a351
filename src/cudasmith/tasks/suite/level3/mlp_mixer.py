"""An MLP-Mixer image classifier, in float32.

Patch embedding, mixer layers (a token-mixing and a channel-mixing MLP, each with LayerNorm, GELU and a
residual), LayerNorm, mean pooling and a linear head.

The top config is Mixer-B/16 on 224×224 images (196 patches, width 768, 12 layers).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "image": 32, "patch": 8, "dim": 64, "token_hidden": 32, "channel_hidden": 128, "layers": 2},
    {
        "batch": 16,
        "image": 224,
        "patch": 16,
        "dim": 512,
        "token_hidden": 256,
        "channel_hidden": 2048,
        "layers": 8,
    },
    {
        "batch": 64,
        "image": 224,
        "patch": 16,
        "dim": 768,
        "token_hidden": 384,
        "channel_hidden": 3072,
        "layers": 12,
    },
]
HIDDEN_CONFIGS = [
    {
        "batch": range(4, 8),
        "image": 96,
        "patch": 12,
        "dim": 320,
        "token_hidden": 160,
        "channel_hidden": 1280,
        "layers": 4,
    }
]
CLASSES = 1000


def _layer_norm(dim: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(dim)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class MixerLayer(nn.Module):
    def __init__(self, tokens: int, dim: int, token_hidden: int, channel_hidden: int) -> None:
        super().__init__()
        self.token_norm, self.channel_norm = _layer_norm(dim), _layer_norm(dim)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens)
        )
        self.channel_mlp = nn.Sequential(
            nn.Linear(dim, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.channel_norm(x))


class Model(nn.Module):
    def __init__(
        self, image: int, patch: int, dim: int, token_hidden: int, channel_hidden: int, layers: int
    ) -> None:
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.layers = nn.Sequential(
            *(MixerLayer(tokens, dim, token_hidden, channel_hidden) for _ in range(layers))
        )
        self.norm = _layer_norm(dim)
        self.head = nn.Linear(dim, CLASSES)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.embed(images).flatten(2).transpose(1, 2)
        x = self.norm(self.layers(x))
        return self.head(x.mean(dim=1))


def get_inputs(
    batch: int = 2,
    image: int = 32,
    patch: int = 8,
    dim: int = 64,
    token_hidden: int = 32,
    channel_hidden: int = 128,
    layers: int = 2,
) -> list[torch.Tensor]:
    return [torch.randn(batch, 3, image, image)]


def get_init_inputs(
    batch: int = 2,
    image: int = 32,
    patch: int = 8,
    dim: int = 64,
    token_hidden: int = 32,
    channel_hidden: int = 128,
    layers: int = 2,
) -> list:
    return [image, patch, dim, token_hidden, channel_hidden, layers]

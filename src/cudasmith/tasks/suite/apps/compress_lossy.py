"""Error-bounded lossy compression of a 2-D float32 field, in the style of SZ.

Quantise every value to the nearest multiple of 2·bound, predict each quantised value from its north,
west and north-west neighbours (the Lorenzo predictor, zero outside the field), zigzag-encode the
prediction residuals, and pack them row-major in blocks of 32 that each use only as many bits as their
largest code needs.

Outputs: the residual codes (int32, the field's shape), each block's bit width (int32) and the
compressed size in bytes (int64, one element: per block a one-byte header plus its packed bits, rounded
up to whole bytes). The compression ratio is the field's 4 bytes per value over that size.

The field is smooth waves plus a noisy region and a sharp front, so block widths vary. The validator
decodes the codes itself and checks the bound at every value (|x − x̂| ≤ bound, plus float32 rounding
of x), that each code fits its block's width, that the widths are the smallest that fit, and that the
size adds up: any correct encoder reaches the same ratio, so the ratio cannot be bought with the bound.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"height": 31, "width": 100, "bound": 0.01},
    {"height": 1800, "width": 3600, "bound": 0.1},
    {"height": 16384, "width": 8192, "bound": 0.05},
]
HIDDEN_CONFIGS = [{"height": range(800, 1251), "width": range(621, 973), "bound": 0.02}]
BLOCK = 32


class Model(nn.Module):
    def forward(self, field: torch.Tensor, bound: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        quantised = torch.round(field / (2.0 * bound)).long()
        padded = F.pad(quantised, (1, 0, 1, 0))
        residual = quantised - (padded[:-1, 1:] + padded[1:, :-1] - padded[:-1, :-1])
        codes = (residual << 1) ^ (residual >> 63)
        flat = codes.reshape(-1)
        blocks = F.pad(flat, (0, (-flat.numel()) % BLOCK)).view(-1, BLOCK)
        widths = torch.frexp(blocks.amax(dim=1).double())[1]
        lengths = torch.full_like(widths, BLOCK)
        lengths[-1] = flat.numel() - (blocks.shape[0] - 1) * BLOCK
        size = (1 + (lengths * widths + 7) // 8).sum().reshape(1)
        return codes.int(), widths.int(), size.long()


def get_inputs(height: int = 31, width: int = 100, bound: float = 0.01) -> list:
    y = torch.linspace(0.0, 1.0, height)[:, None]
    x = torch.linspace(0.0, 1.0, width)[None, :]
    field = torch.zeros(height, width)
    for _ in range(6):
        frequency, phase, amplitude = (
            torch.rand(2) * 12.0,
            torch.rand(()) * 2 * math.pi,
            torch.randn(()) * 20.0,
        )
        field = field + amplitude * torch.sin(2 * math.pi * (frequency[0] * x + frequency[1] * y) + phase)
    front = (x - 0.6 - 0.1 * torch.sin(7.0 * y)) > 0
    noisy = (y > 0.5) & (x < 0.3)
    field = field + 40.0 * front + torch.where(noisy, torch.randn(height, width), 0.0)
    return [field, bound]


def get_init_inputs(height: int = 31, width: int = 100, bound: float = 0.01) -> list:
    return []


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor, torch.Tensor], reference: tuple
) -> str | None:
    field, bound = inputs
    codes, widths, size = (t.long() for t in output)
    if bool((codes < 0).any()):
        return f"code {int(torch.nonzero(codes.reshape(-1) < 0)[0])} is negative; zigzag codes are not"
    flat = codes.reshape(-1)
    blocks = F.pad(flat, (0, (-flat.numel()) % BLOCK)).view(-1, BLOCK)
    if bool(((widths < 0) | (widths > 32)).any()):
        return f"block {int(torch.nonzero((widths < 0) | (widths > 32))[0])} has a width outside 0..32 bits"
    needed = torch.frexp(blocks.amax(dim=1).double())[1].long()
    if bool((widths < needed).any()):
        block = int(torch.nonzero(widths < needed)[0])
        return f"block {block} has width {int(widths[block])} bits but holds a code that needs {int(needed[block])}"
    if bool((widths > needed).any()):
        block = int(torch.nonzero(widths > needed)[0])
        return f"block {block} has width {int(widths[block])} bits; its largest code needs only {int(needed[block])}"
    lengths = torch.full_like(widths, BLOCK)
    lengths[-1] = flat.numel() - (blocks.shape[0] - 1) * BLOCK
    expected_size = int((1 + (lengths * widths + 7) // 8).sum())
    if int(size[0]) != expected_size:
        return f"the compressed size is given as {int(size[0])} bytes; the widths add up to {expected_size}"
    residual = (codes >> 1) ^ -(codes & 1)
    decoded = residual.cumsum(0).cumsum(1).double() * (2.0 * bound)
    exact = field.double()
    error = (decoded - exact).abs()
    allowed = bound + exact.abs() * 2.0**-23
    if bool((error > allowed).any()):
        row, col = (int(i) for i in torch.nonzero(error > allowed)[0])
        return (
            f"value [{row}, {col}] decodes to {float(decoded[row, col]):.9g}, but the field holds "
            f"{float(exact[row, col]):.9g}: error {float(error[row, col]):.3g} exceeds the bound {bound}"
        )
    return None


def bytes_moved(height: int, width: int, bound: float) -> int:
    return 2 * 4 * height * width + 4 * (-(-height * width // BLOCK)) + 8

"""One step of an all-pairs gravitational N-body simulation, in float32.

G = 1 and Plummer softening 0.01: every body's acceleration from all the others, then a kick-drift step
of length 0.001; returns the new positions and velocities.

Bodies form a dense core (closer together than the softening length) inside a sparse halo, with masses
spanning three orders of magnitude, and start nearly at rest, so the new velocities are mostly the
computed accelerations.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"bodies": 1000}, {"bodies": 16381}, {"bodies": 65536}]
HIDDEN_CONFIGS = [{"bodies": range(4800, 7503)}]
SOFTENING, DT = 0.01, 1e-3
# Bodies whose pairwise offsets are held in memory at once in the reference.
CHUNK = 512


class Model(nn.Module):
    def forward(
        self, positions: torch.Tensor, velocities: torch.Tensor, masses: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        accelerations = []
        for start in range(0, positions.shape[0], CHUNK):
            offsets = positions[None, :, :] - positions[start : start + CHUNK, None, :]
            weights = masses * (offsets.square().sum(-1) + SOFTENING**2) ** -1.5
            accelerations.append((weights.unsqueeze(-1) * offsets).sum(1))
        velocities = velocities + DT * torch.cat(accelerations)
        return positions + DT * velocities, velocities


def get_inputs(bodies: int = 1000) -> list[torch.Tensor]:
    in_core = torch.rand(bodies, 1) < 0.7
    positions = torch.randn(bodies, 3) * torch.where(in_core, 0.05, 1.0) + torch.tensor([0.3, -0.2, 0.1])
    masses = 10.0 ** (3.0 * torch.rand(bodies))
    return [positions, 0.01 * torch.randn(bodies, 3), masses / masses.sum()]


def get_init_inputs(bodies: int = 1000) -> list:
    return []


def flops(bodies: int) -> int:
    # The customary 20 floating-point operations per pair interaction.
    return 20 * bodies * bodies

"""One AdamW optimizer step in float32 over a flat parameter buffer: the new parameters and both moments.

PyTorch's AdamW (decoupled weight decay of 0.1 as in LLM pre-training, bias-corrected moments, ε added
after the square root), with the step number fixed per config. Gradient and moment magnitudes span
10⁻⁸ to 10⁻¹, so that ε matters for some elements and not for others; parameters are of typical
initialisation size, so the update is a visible fraction of each. Inputs are not modified: the step
returns new tensors.
"""

import math

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 1000, "step": 1}, {"n": 7_000_003, "step": 10}, {"n": 67_108_864, "step": 1000}]
HIDDEN_CONFIGS = [{"n": range(2400013, 3750023), "step": 7}]


class Model(nn.Module):
    def __init__(
        self,
        step: int,
        lr: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.1,
    ) -> None:
        super().__init__()
        self.step, self.lr, self.beta1, self.beta2 = step, lr, beta1, beta2
        self.eps, self.weight_decay = eps, weight_decay

    def forward(
        self, param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        exp_avg = torch.lerp(exp_avg, grad, 1.0 - self.beta1)
        exp_avg_sq = exp_avg_sq * self.beta2 + grad * grad * (1.0 - self.beta2)
        bias_correction1 = 1.0 - self.beta1**self.step
        bias_correction2 = 1.0 - self.beta2**self.step
        denom = exp_avg_sq.sqrt() / math.sqrt(bias_correction2) + self.eps
        param = param * (1.0 - self.lr * self.weight_decay) - (self.lr / bias_correction1) * exp_avg / denom
        return param, exp_avg, exp_avg_sq


class Expert(Model):
    """PyTorch's fused AdamW kernel (torch._fused_adamw_, what AdamW(fused=True) runs) on copies."""

    def forward(
        self, param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        param, exp_avg, exp_avg_sq = param.clone(), exp_avg.clone(), exp_avg_sq.clone()
        step = torch.tensor(float(self.step), device=param.device)
        torch._fused_adamw_(
            [param],
            [grad],
            [exp_avg],
            [exp_avg_sq],
            [],
            [step],
            lr=self.lr,
            beta1=self.beta1,
            beta2=self.beta2,
            weight_decay=self.weight_decay,
            eps=self.eps,
            amsgrad=False,
            maximize=False,
        )
        return param, exp_avg, exp_avg_sq


EXPERT = Expert


def get_inputs(n: int = 1000, step: int = 1) -> list[torch.Tensor]:
    magnitude = 10.0 ** (torch.rand(n) * 7.0 - 8.0)
    param = torch.randn(n) * 0.02
    grad = torch.randn(n) * magnitude
    exp_avg = torch.randn(n) * magnitude
    exp_avg_sq = (torch.randn(n) * magnitude) ** 2 * (torch.rand(n) + 0.5)
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs(n: int = 1000, step: int = 1) -> list:
    return [step]


def flops(n: int, step: int) -> int:
    # Both moment updates, the square root, the bias corrections, ε, the decay and the update.
    return 14 * n


def bytes_moved(n: int, step: int) -> int:
    return 4 * 7 * n

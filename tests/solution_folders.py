"""Folders of solutions for the bench tests: a solution file of the test suite by name, and a fake
KernelBench checkout with KernelBench's layout (problems of our own, none copied from KernelBench)."""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).parent
EXPLOITS = HERE / "exploits" / "solutions"
PROBLEMS = HERE / "problems"

# A KernelBench-style problem (Model, get_inputs, get_init_inputs) of our own, written for the fake
# checkout: the real checkout's problems are not copied into ours.
RELU_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 257) * 10.0]


def get_init_inputs():
    return []
"""


def solution(name: str) -> Path:
    """A solution file of the test suite, honest or cheating."""
    return EXPLOITS / name if (EXPLOITS / name).exists() else HERE / "solutions" / name


def fake_kernelbench(root: Path) -> Path:
    """A checkout with KernelBench's layout: KernelBench/levelN/ID_Name.py."""
    level1 = root / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    (level1 / "19_ReLU.py").write_text(RELU_PROBLEM)
    shutil.copy(PROBLEMS / "kernelbench_style_add.py", level1 / "2_Add.py")
    level4 = root / "KernelBench" / "level4"
    level4.mkdir()
    (level4 / "1_Big.py").write_text("from transformers import AutoModel\nAutoModel.from_pretrained('x')\n")
    return root

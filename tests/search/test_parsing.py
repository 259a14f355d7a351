"""Finding the solution file in real-looking model answers, and SEARCH/REPLACE edits of a parent."""

from __future__ import annotations

import ast

import pytest

from cudasmith.search.edits import Edit, apply_edit
from cudasmith.search.parsing import code_blocks, parse_answer

from conftest import EXAMPLES

SOLUTION = (EXAMPLES / "softmax_cpu.py").read_text()

KERNEL = """extern "C" __global__ void scale(const float* x, float* y, float a, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}"""
PYTHON_USING_SOURCE = """import torch
from torch import nn

from cudasmith.runtime import compile_cuda

scale = compile_cuda(cuda_source, "scale")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        scale(x, y, 2.0, x.numel(), grid=(x.numel() + 255) // 256, block=256)
        return y
"""


def defines_model_new(source: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.parse(source).body)


def test_prose_around_one_block() -> None:
    answer = (
        f"Here is a fast softmax. It uses OpenMP.\n\n```python\n{SOLUTION}```\n\nThis should be 3x faster."
    )
    parsed = parse_answer(answer)
    assert parsed.ok and parsed.kind == "file"
    assert parsed.source == SOLUTION


def test_several_blocks_take_the_last_complete_solution() -> None:
    draft = SOLUTION.replace("softmax_rows", "draft_rows")
    answer = (
        f"First attempt:\n```python\n{draft}```\nWait, let me improve it.\n```python\n{SOLUTION}```\n"
        "And to test it:\n```bash\ncudasmith eval solution.py --task level1/softmax\n```\n"
    )
    parsed = parse_answer(answer)
    assert parsed.source == SOLUTION
    assert "2 blocks define ModelNew" in parsed.notes[0]


def test_cuda_and_python_in_separate_blocks_are_joined() -> None:
    answer = f"The kernel:\n```cuda\n{KERNEL}\n```\nand the module:\n```python\n{PYTHON_USING_SOURCE}```"
    parsed = parse_answer(answer)
    assert parsed.ok, parsed.reason
    tree = ast.parse(parsed.source)
    assignment = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "cuda_source")
    assert ast.literal_eval(assignment.value).strip() == KERNEL
    call_line = next(n.lineno for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "scale")
    assert assignment.lineno < call_line, "the source must be defined before it is compiled"
    assert "took cuda_source from the cuda block" in parsed.notes[0]


def test_two_kernel_blocks_are_matched_to_their_names() -> None:
    other = 'extern "C" __global__ void shift(float* y, long n) { }'
    python = PYTHON_USING_SOURCE.replace(
        'scale = compile_cuda(cuda_source, "scale")',
        'shift = compile_cuda(SHIFT_SRC, "shift")\nscale = compile_cuda(SCALE_SRC, "scale")',
    )
    answer = f"```cpp\n{KERNEL}\n```\n```cpp\n{other}\n```\n```python\n{python}```"
    parsed = parse_answer(answer)
    values = {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in ast.parse(parsed.source).body
        if isinstance(n, ast.Assign) and n.targets[0].id.endswith("_SRC")
    }
    assert "void scale" in values["SCALE_SRC"] and "void shift" in values["SHIFT_SRC"]


def test_missing_fences_with_prose_before_and_after() -> None:
    answer = f"Sure! Below is the implementation.\n\n{SOLUTION}\nThis version fuses the three passes."
    parsed = parse_answer(answer)
    assert parsed.ok, parsed.reason
    assert parsed.source.strip() == SOLUTION.strip()
    assert "no fences" in parsed.notes[0]


def test_an_untagged_fence_and_a_longer_fence_holding_backticks() -> None:
    solution = SOLUTION.replace('"""Row-wise', '"""```Row-wise```')
    parsed = parse_answer(f"````\n{solution}````")
    assert parsed.source == solution


def test_windows_line_endings() -> None:
    parsed = parse_answer(f"```python\n{SOLUTION}```".replace("\n", "\r\n"))
    assert parsed.source == SOLUTION


def test_an_answer_cut_off_mid_code_is_a_reason_not_a_crash() -> None:
    cut = SOLUTION[: SOLUTION.index("class ModelNew") + 60]
    parsed = parse_answer(f"Here it is:\n```python\n{cut}", finish_reason="length")
    assert not parsed.ok
    assert "not closed" in parsed.reason and "does not parse" in parsed.reason
    assert "the model hit its token limit" in parsed.reason


def test_an_unclosed_block_that_is_complete_code_is_used() -> None:
    parsed = parse_answer(f"```python\n{SOLUTION}", finish_reason="length")
    assert parsed.ok and defines_model_new(parsed.source)


def test_thinking_is_not_the_answer() -> None:
    wrong = SOLUTION.replace("softmax_rows", "wrong_rows")
    answer = f"<think>Maybe:\n```python\n{wrong}```\nNo, better:</think>\n```python\n{SOLUTION}```"
    assert parse_answer(answer).source == SOLUTION
    unfinished = parse_answer("<think>I should first consider the memory", finish_reason="length")
    assert not unfinished.ok and "inside the model's thinking" in unfinished.reason


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "the answer is empty"),
        ("I cannot help with that.", "holds no code"),
        (f"```cuda\n{KERNEL}\n```", "no code defines class ModelNew (blocks: cuda)"),
        (
            "```python\nclass ModelNew(nn.Module):\n    def forward(self, x)\n        return x\n```",
            "does not parse",
        ),
    ],
)
def test_answers_without_a_solution_say_why(answer: str, reason: str) -> None:
    parsed = parse_answer(answer)
    assert not parsed.ok
    assert reason in parsed.reason
    assert "\n" not in parsed.reason


def test_code_blocks_of_an_answer() -> None:
    blocks = code_blocks("a\n```cuda\nx\n```\nb\n~~~py\ny\n~~~\n```\nz")
    assert [(b.language, b.code, b.closed) for b in blocks] == [
        ("cuda", "x\n", True),
        ("py", "y\n", True),
        ("", "z\n", False),
    ]


def edits_answer(*pairs: tuple[str, str], fenced: bool = False) -> str:
    body = "\n".join(f"<<<<<<< SEARCH\n{s}=======\n{r}>>>>>>> REPLACE" for s, r in pairs)
    return f"I will change two things.\n```python\n{body}\n```\n" if fenced else f"Changes:\n{body}\n"


def test_search_replace_edits_apply_to_the_parent() -> None:
    answer = edits_answer(
        ("        double total = 0.0;\n", "        float total = 0.0f;\n"),
        (
            "    #pragma omp parallel for schedule(static)\n",
            "    #pragma omp parallel for schedule(dynamic)\n",
        ),
        fenced=True,
    )
    parsed = parse_answer(answer, parent=SOLUTION)
    assert parsed.ok and parsed.kind == "edits", parsed.reason
    assert parsed.source == SOLUTION.replace("double total = 0.0;", "float total = 0.0f;").replace(
        "schedule(static)", "schedule(dynamic)"
    )


def test_edits_tolerate_whitespace_and_indentation() -> None:
    parent = "class ModelNew:\n    def forward(self, x):\n        y = x + 1   \n        return y\n"
    trailing = apply_edit(parent, Edit("        y = x + 1\n", "        y = x + 2\n"))
    assert trailing[0] == "class ModelNew:\n    def forward(self, x):\n        y = x + 2\n        return y\n"
    shifted, note = apply_edit(parent, Edit("y = x + 1\nreturn y\n", "z = x * 3\nreturn z\n"))
    assert shifted == "class ModelNew:\n    def forward(self, x):\n        z = x * 3\n        return z\n"
    assert "re-indented" in note


def test_failed_edits_say_which_and_why() -> None:
    answer = edits_answer(
        ("        double total = 0.0;\n", "        double total = 0;\n"), ("no such line\n", "x\n")
    )
    parsed = parse_answer(answer, parent=SOLUTION)
    assert not parsed.ok
    assert parsed.reason == "edit 2 of 2: its SEARCH part is not in the parent (it begins 'no such line')"
    assert "no parent" in parse_answer(answer).reason
    broken = parse_answer(
        edits_answer(("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module\n")), parent=SOLUTION
    )
    assert not broken.ok and "after the edits the file does not parse" in broken.reason

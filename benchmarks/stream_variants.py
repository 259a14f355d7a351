"""The stream of throughput.py's stream mode: many variants of one or two tasks' kernels, as a search
judges them, made from the batch's own kernels (benchmarks/candidates), the same every time.

    python benchmarks/stream_variants.py OUT_DIR [--per-task 12] [--tasks level1/relu,level1/softmax]
    python benchmarks/stream_variants.py OUT_DIR --kind nobuild     # stream_nobuild.py: NVRTC and Triton only

Every variant gets a tag in its kernel source (so NVRTC, Triton and nvcc compile it afresh, as a new
candidate of a search would) and one edit from its recipe: a tuning that keeps it correct (threads per
block, Triton block sizes and warps), or a bug that does not (a dropped tail, no max shift, no
normalisation, a leaky ReLU), or none. NVRTC, Triton and `load_inline` kernels are mixed, and about a
third of each task's variants are wrong. OUT_DIR gets <task>/sNN_<base>_<recipe>.py and EXPECTED.json.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

BATCH = Path(__file__).resolve().parent / "candidates"
TASKS = ("level1/relu", "level1/softmax")
PER_TASK = 12
# Edits, each (old, new), applied exactly once: a recipe whose text is gone from its base fails loudly.
Edits = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Recipe:
    """One variant of a base kernel of the batch: its label, its edits and the verdict it should get."""

    base: str  # relative to the batch folder
    label: str
    edits: Edits
    expected: str


def _threads(python: int, new: int, define: int | None = None) -> Edits:
    """Threads per block: the Python constant, and the kernel's #define where it has one."""
    edits = ((f"THREADS = {python}\n", f"THREADS = {new}\n"),)
    return edits + (((f"#define THREADS {define}\n", f"#define THREADS {new}\n"),) if define else ())


RELU, SOFTMAX = "level1/relu/", "level1/softmax/"
NO_TAIL = (("    if (i < n - n4 * 4) y[n4 * 4 + i] = relu(x[n4 * 4 + i]);\n", ""),)
LEAKY = (("? v : 0.0f; }", "? v : 0.01f * v; }"),)
NO_SHIFT = (("e = tl.exp(v - tl.max(v, axis=0))", "e = tl.exp(v)"),)
NO_NORMALISATION = (("inv = 1.0f / warp_s[0];", "inv = 1.0f;"),)
# Per task, in stream order; the first PER_TASK of each are a third wrong.
RECIPES: dict[str, tuple[Recipe, ...]] = {
    "level1/relu": (
        Recipe(RELU + "cuda_relu.py", "tag", (), "correct"),
        Recipe(RELU + "cuda_relu.py", "threads128", _threads(256, 128), "correct"),
        Recipe(RELU + "cuda_relu.py", "no_tail", NO_TAIL, "incorrect"),
        Recipe(RELU + "cuda_relu.py", "threads512", _threads(256, 512), "correct"),
        Recipe(RELU + "cuda_illegal_address.py", "tag", (), "runtime_error"),
        Recipe(RELU + "cuda_relu.py", "tag", (), "correct"),
        Recipe(RELU + "inline_relu.py", "threads512", (("THREADS = 256;", "THREADS = 512;"),), "correct"),
        Recipe(RELU + "cuda_relu.py", "leaky", LEAKY, "incorrect"),
        Recipe(RELU + "cuda_relu.py", "threads1024", _threads(256, 1024), "correct"),
        Recipe(RELU + "cuda_relu.py", "no_tail_threads128", NO_TAIL + _threads(256, 128), "incorrect"),
        Recipe(RELU + "cuda_relu.py", "threads64", _threads(256, 64), "correct"),
        Recipe(RELU + "cuda_relu.py", "tag", (), "correct"),
        Recipe(RELU + "cuda_relu.py", "leaky_threads512", LEAKY + _threads(256, 512), "incorrect"),
        Recipe(RELU + "cuda_relu.py", "tag", (), "correct"),
        Recipe(RELU + "cuda_relu.py", "threads128", _threads(256, 128), "correct"),
    ),
    "level1/softmax": (
        Recipe(SOFTMAX + "cuda_online.py", "tag", (), "correct"),
        Recipe(SOFTMAX + "triton_rows.py", "tag", (), "correct"),
        Recipe(SOFTMAX + "cuda_no_max_shift.py", "tag", (), "incorrect"),
        Recipe(SOFTMAX + "cuda_block_three_pass.py", "tag", (), "correct"),
        Recipe(SOFTMAX + "cuda_online.py", "threads256", _threads(512, 256, 512), "correct"),
        Recipe(SOFTMAX + "triton_rows.py", "no_shift", NO_SHIFT, "incorrect"),
        Recipe(
            SOFTMAX + "inline_warp_rows.py",
            "warps4",
            (("WARPS_PER_BLOCK = 8;", "WARPS_PER_BLOCK = 4;"),),
            "correct",
        ),
        Recipe(
            SOFTMAX + "triton_rows.py", "loop1024", (("LOOP_BLOCK = 2048", "LOOP_BLOCK = 1024"),), "correct"
        ),
        Recipe(SOFTMAX + "cuda_online.py", "no_normalisation", NO_NORMALISATION, "incorrect"),
        Recipe(SOFTMAX + "cuda_block_three_pass.py", "threads128", _threads(256, 128, 256), "correct"),
        Recipe(
            SOFTMAX + "triton_rows.py", "loop4096", (("LOOP_BLOCK = 2048", "LOOP_BLOCK = 4096"),), "correct"
        ),
        Recipe(SOFTMAX + "cuda_no_max_shift.py", "threads128", _threads(256, 128, 256), "incorrect"),
        Recipe(SOFTMAX + "cuda_online.py", "tag", (), "correct"),
        Recipe(
            SOFTMAX + "triton_rows.py",
            "warps4",
            (("BLOCK=LOOP_BLOCK, num_warps=8)", "BLOCK=LOOP_BLOCK, num_warps=4)"),),
            "correct",
        ),
        Recipe(
            SOFTMAX + "triton_rows.py",
            "no_shift_loop1024",
            (*NO_SHIFT, ("LOOP_BLOCK = 2048", "LOOP_BLOCK = 1024")),
            "incorrect",
        ),
    ),
}
TRITON_FUNCTION = re.compile(r"(@triton\.jit\ndef [^\n]*\n)")
# The base's docstring line naming its verdict, which a variant's recipe may change.
EXPECTED_LINE = re.compile(r"Expected verdict: \w+")


def tag(source: str, number: int) -> str:
    """The source with a comment of its own in every kernel it compiles (CUDA source strings, Triton
    functions), so no compile cache knows it."""
    mark = f"stream variant {number}"
    tagged = source.replace('r"""\n', f'r"""\n// {mark}\n', 1)
    tagged = TRITON_FUNCTION.sub(lambda m: f"{m.group(1)}    # {mark}\n", tagged)
    if tagged == source:
        raise ValueError("no kernel source to tag")
    return tagged


def variant(recipe: Recipe, number: int) -> str:
    """The variant's source: the base, its edits, its tag, and a first line saying what it is."""
    source = (BATCH / recipe.base).read_text()
    for old, new in recipe.edits:
        if source.count(old) != 1:
            raise ValueError(f"{recipe.base} ({recipe.label}): {old!r} is not there exactly once")
        source = source.replace(old, new)
    source = EXPECTED_LINE.sub(f"Expected verdict: {recipe.expected}", source, count=1)
    header = f"# Stream variant {number} of {recipe.base} ({recipe.label})\n"
    return header + tag(source, number)


def write_stream(
    out: Path,
    tasks: tuple[str, ...] = TASKS,
    per_task: int = PER_TASK,
    recipes_of: dict[str, tuple[Recipe, ...]] | None = None,
) -> dict[str, str]:
    """Write the stream into `out` (task by task, each in recipe order) with EXPECTED.json; file → status.
    `recipes_of`: per task, the recipes (default: this stream's, RECIPES; stream_nobuild.RECIPES for the
    no-build stream)."""
    recipes_of = RECIPES if recipes_of is None else recipes_of
    expected: dict[str, str] = {}
    number = 0
    for task in tasks:
        if task not in recipes_of:
            raise ValueError(f"no stream recipes for {task}; known: {', '.join(recipes_of)}")
        recipes = recipes_of[task]
        if not 0 < per_task <= len(recipes):
            raise ValueError(f"{task} has {len(recipes)} recipes: --per-task from 1 to {len(recipes)}")
        for recipe in recipes[:per_task]:
            number += 1
            name = f"{task}/s{number:02d}_{Path(recipe.base).stem}_{recipe.label}.py"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(variant(recipe, number))
            expected[name] = recipe.expected
    (out / "EXPECTED.json").write_text(json.dumps(expected, indent=2) + "\n")
    return expected


def write_kind(
    out: Path, kind: str, tasks: tuple[str, ...] | None = None, per_task: int | None = None
) -> dict[str, str]:
    """Write the stream of `kind` ("build": this module's, with load_inline builds; "nobuild":
    stream_nobuild.py's, NVRTC and Triton only) into `out`; file → expected status."""
    if kind == "nobuild":
        import stream_nobuild

        return write_stream(
            out, tasks or stream_nobuild.TASKS, per_task or stream_nobuild.PER_TASK, stream_nobuild.RECIPES
        )
    if kind != "build":
        raise ValueError(f"the stream's kind is build or nobuild, not {kind!r}")
    return write_stream(out, tasks or TASKS, per_task or PER_TASK)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the stream into")
    parser.add_argument(
        "--kind", choices=("build", "nobuild"), default="build", help="the stream (default build)"
    )
    parser.add_argument("--tasks", help="comma-separated (default: the kind's own)")
    parser.add_argument("--per-task", type=int, help="variants per task (default: the kind's own)")
    args = parser.parse_args()
    tasks = tuple(args.tasks.split(",")) if args.tasks else None
    expected = write_kind(args.out, args.kind, tasks, args.per_task)
    wrong = sum(status != "correct" for status in expected.values())
    print(f"{len(expected)} variants in {args.out}, {wrong} expected wrong")


if __name__ == "__main__":
    main()

"""The no-build stream of throughput.py (`--stream-kind nobuild`): a search's steady state, NVRTC and Triton
kernels only (each compiles in well under a second), 16 variants of each of four tasks, a quarter wrong.

    python benchmarks/stream_variants.py OUT_DIR --kind nobuild

Every variant is a distinct kernel made from the batch's own (benchmarks/candidates): a tuning that keeps it
correct (threads per block, Triton block sizes and warps) or a bug that does not (a dropped or short tail,
no max shift, no normalisation, a missing weight, a race), with the verdict that follows. A task's first
variant is correct (it pays for its session's start); the wrong ones are spread through its stream.
"""

from __future__ import annotations

from stream_variants import Edits, Recipe, _threads

TASKS = ("level1/softmax", "level1/vector_add", "level1/rms_norm", "level1/row_sum")
PER_TASK = 16
SOFTMAX, ADD, RMS, ROWS = (f"{task}/" for task in TASKS)
NO_SHIFT = (("e = tl.exp(v - tl.max(v, axis=0))", "e = tl.exp(v)"),)
NO_NORMALISATION = (("inv = 1.0f / warp_s[0];", "inv = 1.0f;"),)
FLOAT4_NO_TAIL = (
    (
        "    if (i < n - n4 * 4) {\n        long long t = n4 * 4 + i;\n        c[t] = a[t] + b[t];\n    }\n",
        "",
    ),
)
SHORT_MASK = (("mask = offsets < n\n", "mask = offsets < n - 1\n"),)
CUDA_NO_WEIGHT = (
    (
        "out[c] = __float2bfloat16(__bfloat162float(weight[c]) * normalised);",
        "out[c] = __float2bfloat16(normalised);",
    ),
)
TRITON_NO_WEIGHT = (("(w * normalised).to(tl.bfloat16)", "normalised.to(tl.bfloat16)"),)
MEAN_OVER_BLOCK = (("tl.sum(squares, axis=0) / dim + eps", "tl.sum(squares, axis=0) / BLOCK + eps"),)


def _constant(name: str, old: int, new: int) -> Edits:
    """A module-level constant of the Python side (a Triton block size)."""
    return ((f"{name} = {old}\n", f"{name} = {new}\n"),)


def _warps(old: str, new: str) -> Edits:
    return ((old, new),)


def _correct(base: str, label: str, edits: Edits = ()) -> Recipe:
    return Recipe(base, label, edits, "correct")


def _wrong(base: str, label: str, edits: Edits = ()) -> Recipe:
    return Recipe(base, label, edits, "incorrect")


ONLINE, THREE_PASS, SOFTMAX_TRITON = (
    SOFTMAX + f for f in ("cuda_online.py", "cuda_block_three_pass.py", "triton_rows.py")
)
FLOAT4, ADD_TRITON, ADD_SHORT = (
    ADD + f for f in ("cuda_float4.py", "triton_add.py", "cuda_tail_off_by_one.py")
)
RMS_CUDA, RMS_TRITON = RMS + "cuda_rows.py", RMS + "triton_rows.py"
ROWS_CUDA, ROWS_TRITON = ROWS + "cuda_block_rows.py", ROWS + "triton_rows.py"
SOFTMAX_WARPS = _warps("BLOCK=LOOP_BLOCK, num_warps=8)", "BLOCK=LOOP_BLOCK, num_warps=4)")
ADD_WARPS = _warps("BLOCK=BLOCK, num_warps=8)", "BLOCK=BLOCK, num_warps=4)")
RMS_WARPS = _warps("BLOCK=BLOCK, num_warps=8)", "BLOCK=BLOCK, num_warps=4)")
ROWS_FEWER_WARPS = _warps("num_warps=4 if block <= 1024 else 8", "num_warps=2 if block <= 1024 else 4")
ROWS_MORE_WARPS = _warps("num_warps=4 if block <= 1024 else 8", "num_warps=8 if block <= 1024 else 16")

# Per task, in stream order: four wrong of sixteen, none first.
RECIPES: dict[str, tuple[Recipe, ...]] = {
    "level1/softmax": (
        _correct(ONLINE, "threads512"),
        _correct(SOFTMAX_TRITON, "loop2048"),
        _correct(THREE_PASS, "threads256"),
        _wrong(SOFTMAX + "cuda_no_max_shift.py", "threads256"),
        _correct(ONLINE, "threads256", _threads(512, 256, 512)),
        _correct(SOFTMAX_TRITON, "loop1024", _constant("LOOP_BLOCK", 2048, 1024)),
        _correct(THREE_PASS, "threads128", _threads(256, 128, 256)),
        _wrong(SOFTMAX_TRITON, "no_shift", NO_SHIFT),
        _correct(ONLINE, "threads1024", _threads(512, 1024, 512)),
        _correct(SOFTMAX_TRITON, "loop4096", _constant("LOOP_BLOCK", 2048, 4096)),
        _correct(THREE_PASS, "threads512", _threads(256, 512, 256)),
        _wrong(ONLINE, "no_normalisation", NO_NORMALISATION),
        _correct(ONLINE, "threads128", _threads(512, 128, 512)),
        _correct(SOFTMAX_TRITON, "warps4", SOFTMAX_WARPS),
        _correct(THREE_PASS, "threads1024", _threads(256, 1024, 256)),
        _wrong(SOFTMAX + "cuda_no_max_shift.py", "threads128", _threads(256, 128, 256)),
    ),
    "level1/vector_add": (
        _correct(FLOAT4, "threads256"),
        _correct(ADD_TRITON, "block2048"),
        _correct(FLOAT4, "threads128", _threads(256, 128)),
        _wrong(ADD_SHORT, "threads256"),
        _correct(ADD_TRITON, "block1024", _constant("BLOCK", 2048, 1024)),
        _correct(FLOAT4, "threads512", _threads(256, 512)),
        _correct(ADD_TRITON, "block4096", _constant("BLOCK", 2048, 4096)),
        _wrong(ADD_TRITON, "short_mask", SHORT_MASK),
        _correct(FLOAT4, "threads1024", _threads(256, 1024)),
        _correct(ADD_TRITON, "block512_warps4", _constant("BLOCK", 2048, 512) + ADD_WARPS),
        _correct(FLOAT4, "threads64", _threads(256, 64)),
        _wrong(FLOAT4, "no_tail_threads512", FLOAT4_NO_TAIL + _threads(256, 512)),
        _correct(ADD_TRITON, "block8192", _constant("BLOCK", 2048, 8192)),
        _correct(ADD_TRITON, "warps4", ADD_WARPS),
        _correct(ADD_TRITON, "block1024_warps4", _constant("BLOCK", 2048, 1024) + ADD_WARPS),
        _wrong(ADD_SHORT, "threads128", _threads(256, 128)),
    ),
    "level1/rms_norm": (
        _correct(RMS_CUDA, "threads256"),
        _correct(RMS_TRITON, "block2048"),
        _correct(RMS_CUDA, "threads128", _threads(256, 128, 256)),
        _wrong(RMS_CUDA, "no_weight", CUDA_NO_WEIGHT),
        _correct(RMS_TRITON, "block1024", _constant("BLOCK", 2048, 1024)),
        _correct(RMS_CUDA, "threads512", _threads(256, 512, 256)),
        _correct(RMS_TRITON, "block4096", _constant("BLOCK", 2048, 4096)),
        _wrong(RMS_TRITON, "mean_over_block", MEAN_OVER_BLOCK),
        _correct(RMS_CUDA, "threads1024", _threads(256, 1024, 256)),
        _correct(RMS_TRITON, "block512", _constant("BLOCK", 2048, 512)),
        _correct(RMS_CUDA, "threads64", _threads(256, 64, 256)),
        _wrong(RMS_CUDA, "no_weight_threads128", CUDA_NO_WEIGHT + _threads(256, 128, 256)),
        _correct(RMS_TRITON, "block8192", _constant("BLOCK", 2048, 8192)),
        _correct(RMS_TRITON, "warps4", RMS_WARPS),
        _correct(RMS_TRITON, "block1024_warps4", _constant("BLOCK", 2048, 1024) + RMS_WARPS),
        _wrong(RMS_TRITON, "no_weight_block1024", TRITON_NO_WEIGHT + _constant("BLOCK", 2048, 1024)),
    ),
    "level1/row_sum": (
        _correct(ROWS_CUDA, "threads256"),
        _correct(ROWS_TRITON, "block4096"),
        _correct(ROWS_CUDA, "threads128", _threads(256, 128, 256)),
        _wrong(ROWS + "cuda_race_accumulate.py", "threads256"),
        _correct(ROWS_TRITON, "block1024", _constant("MAX_BLOCK", 4096, 1024)),
        _correct(ROWS_CUDA, "threads512", _threads(256, 512, 256)),
        _correct(ROWS_TRITON, "block2048", _constant("MAX_BLOCK", 4096, 2048)),
        _wrong(ROWS + "cuda_warp0_only.py", "threads256"),
        _correct(ROWS_CUDA, "threads1024", _threads(256, 1024, 256)),
        _correct(ROWS_TRITON, "block8192", _constant("MAX_BLOCK", 4096, 8192)),
        _correct(ROWS_CUDA, "threads64", _threads(256, 64, 256)),
        _wrong(ROWS + "cuda_race_accumulate.py", "threads128", _threads(256, 128, 256)),
        _correct(ROWS_TRITON, "fewer_warps", ROWS_FEWER_WARPS),
        _correct(ROWS_TRITON, "more_warps", ROWS_MORE_WARPS),
        _correct(ROWS_TRITON, "block2048_fewer_warps", _constant("MAX_BLOCK", 4096, 2048) + ROWS_FEWER_WARPS),
        _wrong(ROWS + "cuda_warp0_only.py", "threads512", _threads(256, 512, 256)),
    ),
}

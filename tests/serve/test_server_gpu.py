"""`cudasmith serve` on a GPU: honest kernels and cheats get through the server the statuses they get from
`cudasmith.evaluate`, on the same GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudasmith import EvalOptions, evaluate
from cudasmith.serve.client import Client

from conftest import EXPLOITS, ROOT
from served import Server

pytestmark = pytest.mark.gpu

# Quick and untimed (this test process may hold a CUDA context of its own, beside the server's workers).
OPTIONS = {"seeds": 2, "timing": False, "baselines": ["eager"]}
CASES = [
    (EXPLOITS / "gpu_honest_relu.py", "level1/relu"),
    (EXPLOITS / "gpu_honest_triton_relu.py", "level1/relu"),
    (EXPLOITS / "gpu_stale_empty.py", "level1/relu"),
    (EXPLOITS / "gpu_torch_matmul.py", "level1/matmul"),
    (ROOT / "examples" / "softmax_cuda.py", "level1/softmax"),
]


def test_the_server_gives_on_a_gpu_the_statuses_evaluate_gives(tmp_path: Path) -> None:
    with Server(tmp_path / "store.db", "--gpus", "1", device="cuda") as server:
        client = Client(server.url)
        ids = [client.submit(path, task=task, options=OPTIONS) for path, task in CASES]
        served = [client.result(id, timeout_s=900) for id in ids]
    options = EvalOptions(device="cuda", seeds_per_config=2, timing=False, baselines=("eager",))
    here = [evaluate(path, task=task, options=options) for path, task in CASES]
    assert [v.status for v in served] == [v.status for v in here]
    assert [v.status.value for v in served] == ["correct", "correct", "incorrect", "rejected", "correct"]
    assert [v.device for v in served] == [v.device for v in here], "the same GPU, named by the judge"

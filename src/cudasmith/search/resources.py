"""ptxas resource usage of a CUDA candidate's kernels: registers, shared memory, spills.

The kernel sources are found in the solution's text (string constants passed to `compile_cuda`; nothing
of the candidate runs) and compiled with NVRTC and `--ptxas-options=-v` in a child process, so a
compiler crash costs that child only. NVRTC needs no GPU.

    python -m cudasmith.search.resources ARCH < [[source, name], ...] as JSON   # the child
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from cudasmith.errors import CudasmithError
from cudasmith.runtime.cuda import _nvrtc_compile, include_dirs

# A child compiling a handful of kernels finishes in seconds; this bounds a pathological source.
PTXAS_TIMEOUT_S = 120.0
ENTRY = re.compile(r"Compiling entry function '([^']+)'")
SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SHARED = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    def describe(self) -> str:
        spills = (
            f"{self.spill_store_bytes} B spill stores, {self.spill_load_bytes} B spill loads"
            if self.spill_store_bytes or self.spill_load_bytes
            else "no spills"
        )
        return f"`{self.kernel}`: {self.registers} registers, {self.shared_bytes} B static shared memory, {spills}"


def parse_ptxas_log(log: str) -> list[KernelResources]:
    """Each entry function's resources from ptxas's verbose output."""
    found: list[KernelResources] = []
    current: dict[str, int | str] = {}
    for line in log.splitlines():
        if entry := ENTRY.search(line):
            current = {"kernel": entry.group(1)}
        elif (spills := SPILLS.search(line)) and current:
            current.update(stack=int(spills[1]), stores=int(spills[2]), loads=int(spills[3]))
        elif (used := USED.search(line)) and current:
            shared = SHARED.search(line)
            found.append(
                KernelResources(
                    kernel=str(current["kernel"]),
                    registers=int(used[1]),
                    shared_bytes=int(shared[1]) if shared else 0,
                    stack_bytes=int(current.get("stack", 0)),
                    spill_store_bytes=int(current.get("stores", 0)),
                    spill_load_bytes=int(current.get("loads", 0)),
                )
            )
            current = {}
    return found


def cuda_kernels(source: str) -> list[tuple[str, str]]:
    """(kernel source, kernel name) for each `compile_cuda(SOURCE, "name")` whose source is a string
    constant of the file (sources built at run time are left out)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    strings = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    kernels = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        text, name = node.args[0], node.args[1]
        if function != "compile_cuda" or not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            continue
        if isinstance(text, ast.Constant) and isinstance(text.value, str):
            kernels.append((text.value, name.value))
        elif isinstance(text, ast.Name) and text.id in strings:
            kernels.append((strings[text.id], name.value))
    return list(dict.fromkeys(kernels))


def ptxas_resources(source: str, arch: str) -> list[KernelResources]:
    """The resources of every kernel of the solution that compiles on its own (others are left out)."""
    kernels = cuda_kernels(source)
    if not kernels:
        return []
    # The child imports cudasmith from wherever this process did (an uninstalled checkout included).
    package_root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cudasmith.search.resources", arch],
            input=json.dumps(kernels),
            env=env,
            capture_output=True,
            text=True,
            timeout=PTXAS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return []
    if done.returncode != 0:
        return []
    return [KernelResources(**k) for k in json.loads(done.stdout or "[]")]


def describe_resources(resources: list[KernelResources], arch: str) -> str:
    """One line for a prompt."""
    return f"ptxas ({arch}): " + "; ".join(r.describe() for r in resources)


def main() -> None:
    options = [f"--gpu-architecture={sys.argv[1]}", "-std=c++17", "--ptxas-options=-v"]
    options += [f"-I{directory}" for directory in include_dirs()]
    found: list[KernelResources] = []
    for text, name in json.loads(sys.stdin.read()):
        try:
            _, _, log = _nvrtc_compile(text, name, options)
        except CudasmithError:
            continue
        found += parse_ptxas_log(log)
    sys.stdout.write(json.dumps([asdict(r) for r in found]))


if __name__ == "__main__":
    main()

"""The static screen: a cheap first gate that reads a solution's source without running it.

It refuses constructs no honest kernel needs and that cheating needs, spelled plainly: scavenging the
interpreter's objects or frames, starting processes or threads, ending the process, writing to raw file
descriptors, networking, handling signals, assigning to attributes of torch, time, triton or cudasmith
(patching), and, where PyTorch compute is refused, torch.compile. It reads names, so a name built at run
time passes it: it is a cheap first gate that gives a clear reason early, not a defence. The defences
are at run time (workers/audit.py, workers/observe.py, workers/tamper.py and the worker's checks).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cudasmith.harness.wire.status import Rule

# What each forbidden construct is refused as: the rule it would break, and why, in words.
STARTING_PROCESSES = (Rule.PROCESSES_THREADS, "starting processes")
STARTING_THREADS = (Rule.PROCESSES_THREADS, "starting threads")
READING_FRAMES = (Rule.INTROSPECTION, "reading the harness's frames")
ENDING_THE_WORKER = (Rule.EARLY_EXIT, "ending the worker")
SIGNALLING = (Rule.PROCESSES_THREADS, "signalling processes")
PATCHING = (Rule.TAMPERING, "patching a library the judge uses")
FORBIDDEN_MODULES = {
    "subprocess": STARTING_PROCESSES,
    "multiprocessing": STARTING_PROCESSES,
    "threading": STARTING_THREADS,
    "_thread": STARTING_THREADS,
    "concurrent": (Rule.PROCESSES_THREADS, "starting threads or processes"),
    "socket": (Rule.NETWORKING, "networking"),
    "signal": (Rule.SIGNALS, "handling signals"),
    "gc": (Rule.INTROSPECTION, "scavenging live objects"),
    "inspect": READING_FRAMES,
    "cudasmith.harness": (Rule.INTROSPECTION, "reaching into the harness"),
}
FORBIDDEN_CALLS = {
    "sys._getframe": READING_FRAMES,
    "sys.exit": ENDING_THE_WORKER,
    "os._exit": ENDING_THE_WORKER,
    "os.abort": ENDING_THE_WORKER,
    "os.kill": SIGNALLING,
    "os.killpg": SIGNALLING,
    "os.fork": STARTING_PROCESSES,
    "os.forkpty": STARTING_PROCESSES,
    "os.system": STARTING_PROCESSES,
    "os.popen": STARTING_PROCESSES,
    "os.setsid": (Rule.PROCESSES_THREADS, "leaving the process group"),
    "os.write": (Rule.FILE_DESCRIPTORS, "writing to raw file descriptors"),
    "os.dup2": (Rule.FILE_DESCRIPTORS, "replacing file descriptors"),
    "os.close": (Rule.FILE_DESCRIPTORS, "closing the harness's file descriptors"),
    "ctypes.pythonapi": (Rule.TAMPERING, "patching the interpreter"),
    "exit": ENDING_THE_WORKER,
    "quit": ENDING_THE_WORKER,
}
# Where PyTorch compute is refused: torch.compile builds PyTorch's compute into kernels of its own. (A
# CUDA graph is allowed: replaying the solution's own kernels is honest, and the kernel audit at run time
# sees what a graph replays.)
COMPILED = (Rule.PYTORCH_COMPUTE, "PyTorch compute compiled by torch.compile")
HIDDEN_TORCH = {"torch.compile": COMPILED, "torch._dynamo": COMPILED, "torch._inductor": COMPILED}
PATCHABLE_ROOTS = {
    "torch",
    "time",
    "triton",
    "cudasmith",
    "builtins",
    "F",
    "nn",
    "np",
    "numpy",
    "json",
    "os",
    "sys",
}
SPAWN_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")


@dataclass(frozen=True)
class Finding:
    """One forbidden construct: what it is, the rule it would break and why, and where."""

    what: str
    rule: Rule
    why: str
    line: int

    def __str__(self) -> str:
        return f"static screen: {self.what} (line {self.line}) is refused: {self.why}"


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _module_finding(name: str, line: int) -> Finding | None:
    for module, (rule, why) in FORBIDDEN_MODULES.items():
        if name == module or name.startswith(module + "."):
            return Finding(f"import {name}", rule, why, line)
    return None


def screen(source: str, torch_compute_allowed: bool = False) -> Finding | None:
    """The first forbidden construct in `source`, or None. Source that does not parse passes here
    (the worker reports it as a compile error). Where PyTorch compute is refused, so is torch.compile."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if finding := _module_finding(alias.name, line):
                    return finding
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if finding := _module_finding(node.module, line):
                return finding
            for alias in node.names:
                if finding := _module_finding(f"{node.module}.{alias.name}", line):
                    return finding
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in FORBIDDEN_CALLS:
                return Finding(f"{name}()", *FORBIDDEN_CALLS[name], line)
            if name and name.startswith(SPAWN_PREFIXES):
                return Finding(f"{name}()", *STARTING_PROCESSES, line)
            if name in {"setattr", "delattr"} and node.args and _dotted(node.args[0]):
                root = _dotted(node.args[0]).split(".")[0]  # type: ignore[union-attr]
                if root in PATCHABLE_ROOTS:
                    return Finding(f"{name}({_dotted(node.args[0])}, …)", *PATCHING, line)
        elif isinstance(node, ast.Attribute) and _dotted(node) in FORBIDDEN_CALLS:
            return Finding(str(_dotted(node)), *FORBIDDEN_CALLS[str(_dotted(node))], line)
        if not torch_compute_allowed and isinstance(node, ast.Attribute):
            name = _dotted(node) or ""
            for prefix, (rule, why) in HIDDEN_TORCH.items():
                if name == prefix or name.startswith(prefix + "."):
                    return Finding(name, rule, why, line)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                name = _dotted(target) if isinstance(target, ast.Attribute) else None
                # torch.backends.* are settings (TF32, cuDNN autotuning), not functions to replace.
                if name and name.split(".")[0] in PATCHABLE_ROOTS and not name.startswith("torch.backends."):
                    return Finding(f"assignment to {name}", *PATCHING, line)
    return None

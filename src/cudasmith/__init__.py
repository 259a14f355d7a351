"""cudasmith: turn a PyTorch reference into a faster, verified GPU kernel; judge and benchmark kernels honestly.

The public API is what this module exports. Attributes load on first use, so that candidate code's
`from cudasmith.runtime import compile_cuda` does not pull in the harness.
"""

from __future__ import annotations

from cudasmith.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "cudasmith.api",
    "Judge": "cudasmith.harness.session",
    "Client": "cudasmith.serve.client",
    "reward": "cudasmith.report.export",
    "Status": "cudasmith.harness.wire.status",
    "ask": "cudasmith.search.ask",
    "optimize": "cudasmith.search.optimize",
    "OptimizeResult": "cudasmith.search.optimize",
    "OptimizeConfig": "cudasmith.search.config",
    "SearchSettings": "cudasmith.search.config",
    "RunStore": "cudasmith.store",
    "EvalOptions": "cudasmith.harness.options",
    "Verdict": "cudasmith.harness.verdict",
    "ConfigResult": "cudasmith.harness.verdict",
    "Problem": "cudasmith.tasks.problem",
    "load_problem": "cudasmith.tasks.problem",
    "load_task": "cudasmith.tasks.problem",
    "list_task_names": "cudasmith.tasks.problem",
    "CudasmithError": "cudasmith.errors",
    "UsageError": "cudasmith.errors",
    "ProblemError": "cudasmith.errors",
    "CompileError": "cudasmith.errors",
    "HarnessError": "cudasmith.errors",
    "LLMError": "cudasmith.errors",
    "BudgetExhausted": "cudasmith.errors",
    "DevicePeaks": "cudasmith.device",
    "load_peaks": "cudasmith.device",
}
__all__ = [*_EXPORTS, "__version__"]
__getattr__ = lazy_exports(__name__, _EXPORTS)

"""Turning a problem and a config into seeded inputs and a constructed model.

The reference process, the candidate's worker and the parent (for validators) all call these with
the same seeds, so they see identical inputs and identical initial weights without sharing memory.
"""

from __future__ import annotations

import hashlib
import random
from types import ModuleType
from typing import Any, TypedDict

import numpy as np
import torch

from cudasmith.tasks.problem import Config


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (the run's secret, a config index, a sample index…)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def seed_everything(seed: int) -> None:
    """Seed every generator a problem's get_inputs might draw from."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def to_device(value: Any, device: str) -> Any:
    """Move tensors (also inside lists and tuples) to `device`; leave other values alone."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def make_init_inputs(module: ModuleType, config: Config, seed: int) -> list[Any]:
    """Constructor arguments for Model and ModelNew under one config."""
    get_init_inputs = getattr(module, "get_init_inputs", None)
    if get_init_inputs is None:
        return []
    seed_everything(seed)
    return list(get_init_inputs(**config))


def make_inputs(module: ModuleType, config: Config, seed: int, device: str) -> list[Any]:
    """Forward arguments under one config and seed, made on `device` (a problem's factory calls allocate
    there directly; what it makes elsewhere is moved). Processes on the same device get the same values."""
    seed_everything(seed)
    with torch.device(device):
        values = module.get_inputs(**config)
    return [to_device(v, device) for v in values]


def build_model(cls: type, init_inputs: list[Any], seed: int, device: str) -> Any:
    """Construct Model or ModelNew the same way, so parameters drawn in the same order match.

    Modules stay in training mode, as KernelBench runs them (its BatchNorm problems mean batch statistics).
    """
    seed_everything(seed)
    model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    return model


def to_float64(value: Any) -> Any:
    """Floating tensors (also inside lists and tuples) upcast to float64, for the float64 reference."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch.float64)
    if isinstance(value, (list, tuple)):
        return type(value)(to_float64(v) for v in value)
    return value


def tensor_bytes(values: list[Any]) -> int:
    """Bytes held by the tensors among `values`."""
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


class ConfigSizes(TypedDict, total=False):
    """One config's size and work (the fields of harness.wire.results.ConfigDescription)."""

    input_bytes: int
    parameter_bytes: int
    output_bytes: int
    flops: int
    bytes_moved: int
    # Why the reference could not run on meta tensors.
    unknown: str


def describe_config(module: ModuleType, config: Config) -> ConfigSizes:
    """Input, parameter and output bytes and FLOPs of one config, from a run of the reference on meta
    tensors (no memory, no time); a problem's own flops()/bytes_moved() win. References that cannot
    run on meta tensors (data-dependent ones) get an 'unknown' entry saying why, and keep the input
    and parameter bytes when those could be made."""
    from torch.utils.flop_counter import FlopCounterMode

    description = ConfigSizes()
    try:
        with torch.device("meta"):
            model = module.Model(*make_init_inputs(module, config, 0))
            inputs = [to_device(v, "meta") for v in module.get_inputs(**config)]
        description["input_bytes"] = tensor_bytes(inputs)
        is_module = isinstance(model, torch.nn.Module)
        description["parameter_bytes"] = (
            tensor_bytes([*model.parameters(), *model.buffers()]) if is_module else 0
        )
        with torch.device("meta"), FlopCounterMode(display=False) as counter:
            output = model(*inputs)
        outputs = list(output) if isinstance(output, (tuple, list)) else [output]
        description["output_bytes"] = tensor_bytes(outputs)
        description["flops"] = counter.get_total_flops()
    except Exception as exc:
        description["unknown"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    if callable(flops := getattr(module, "flops", None)):
        description["flops"] = int(flops(**config))
    if callable(moved := getattr(module, "bytes_moved", None)):
        description["bytes_moved"] = int(moved(**config))
    return description


def input_tensors(values: list[Any]) -> list[torch.Tensor]:
    """The tensors among `values`, also inside lists and tuples, in order."""
    found: list[torch.Tensor] = []
    for value in values:
        # By type alone: a value a candidate touched is never asked anything (isinstance reads __class__).
        kind = type(value)
        if issubclass(kind, torch.Tensor):
            found.append(value)
        elif kind is list or kind is tuple:
            found += input_tensors(list(value))
    return found


def replace_tensors(values: list[Any], tensors: list[torch.Tensor]) -> list[Any]:
    """`values` with its tensors (in input_tensors order) replaced by `tensors`; other values kept."""
    remaining = iter(tensors)

    def swap(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return next(remaining)
        if isinstance(value, (list, tuple)):
            return type(value)(swap(v) for v in value)
        return value

    return [swap(v) for v in values]


def drawn_inputs(inputs: list[Any], seed: int) -> list[Any]:
    """The harness's own inputs: each floating tensor replaced by signed normal values spread wider than
    the problem's (scale 2·max|x| + 1), same shape, dtype and device; other inputs kept. A candidate
    tuned to the problem's input distribution (ReLU on non-negative inputs…) fails on these."""
    generator_seed = derive_seed(seed, "drawn") % 2**63

    def draw(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
            scale = 2.0 * float(value.detach().abs().double().max()) + 1.0
            generator = torch.Generator(device=value.device).manual_seed(generator_seed + value.numel())
            drawn = torch.randn(value.shape, generator=generator, device=value.device, dtype=torch.float64)
            return (drawn * scale).to(value.dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(draw(v) for v in value)
        return value

    return [draw(v) for v in inputs]


def degeneracy(inputs: list[Any], outputs: list[torch.Tensor]) -> str | None:
    """Why these inputs make the output trivial (an output constant, or equal to an input), or None."""
    tensors = input_tensors(inputs)
    for index, output in enumerate(outputs):
        label = f"output {index}" if len(outputs) > 1 else "the output"
        flat = output.reshape(-1)
        if flat.numel() > 1 and bool((flat == flat[0]).all()):
            return f"{label} is constant ({flat[0].item():.6g})"
        for position, tensor in enumerate(tensors):
            if tensor.shape == output.shape and tensor.dtype == output.dtype and torch.equal(tensor, output):
                return f"{label} equals input {position}"
    return None

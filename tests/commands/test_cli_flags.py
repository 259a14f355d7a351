"""One set of flags: every command's parameters are walked, and a short flag with two meanings, an
option spelled two ways, a value shown as Typer's `<str>`, or a judging flag missing from a command that
judges fails here. Then the behaviours the flags share: one no-GPU rule and message, did-you-mean
wherever a task is named, and the judging options built once."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import torch
import typer
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from cudasmith.cli import COMMANDS, app
from cudasmith.commands.judging import SEEDS_PER_CONFIG, JudgeFlags
from cudasmith.device import NO_GPU, NO_GPU_ERROR
from cudasmith.harness import options as harness_options
from cudasmith.harness.options import EvalOptions

from conftest import EXAMPLES

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="what happens without a GPU")
# The commands that judge candidates, and so take every judging flag.
JUDGING = ("eval", "ask", "optimize", "bench")
# The commands that take a task by name.
TAKING_A_TASK = ("eval", "show", "prompt", "ask", "optimize", "bench")


def options() -> dict[str, list[TyperOption]]:
    """Each command's options, by command name."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return {
        name: [p for p in command.params if isinstance(p, TyperOption)]
        for name, command in group.commands.items()
    }


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_every_command_is_registered() -> None:
    assert set(options()) == set(COMMANDS)


def test_a_short_flag_has_one_meaning_everywhere() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for command in options().values():
        for option in command:
            long = next(o for o in option.opts if o.startswith("--"))
            for short in (o for o in option.opts if not o.startswith("--")):
                meanings[short].add(long)
    assert {short: longs for short, longs in meanings.items() if len(longs) > 1} == {}
    assert meanings["-d"] == {"--device"} and meanings["-n"] == {"--n"} and meanings["-m"] == {"--model"}


def test_an_option_is_spelled_and_abbreviated_one_way() -> None:
    spellings: dict[str, set[tuple[tuple[str, ...], str | None]]] = defaultdict(set)
    for command in options().values():
        for option in command:
            long = next(o for o in option.opts if o.startswith("--"))
            spellings[long].add((tuple(sorted(option.opts)), option.metavar))
    assert {long: seen for long, seen in spellings.items() if len(seen) > 1} == {}


def test_every_value_is_named_in_the_help() -> None:
    for name, command in options().items():
        for option in command:
            if not option.is_flag and option.name != "help":
                assert option.metavar, f"{name} {option.opts[0]} shows Typer's type instead of a name"
    for name in COMMANDS:
        code, out, _ = invoke(name, "--help")
        assert code == 0 and "<" not in out.replace("<bool>", "?"), out
        assert "<bool>" not in out


def test_the_judging_flags_are_on_every_command_that_judges() -> None:
    flags = {f"--{name.replace('_', '-')}" for name in JudgeFlags.__dataclass_fields__}
    by_command = {
        name: {o for option in command for o in (*option.opts, *option.secondary_opts)}
        for name, command in options().items()
    }
    for name in JUDGING:
        assert flags <= by_command[name], (name, flags - by_command[name])
    for name in TAKING_A_TASK:
        assert {"--task", "-t", "--from"} <= by_command[name], name
    for name in ("ask", "optimize", "bench", "report", "export"):
        assert "--store" in by_command[name], name


def test_the_judging_defaults_are_the_harness_defaults() -> None:
    assert SEEDS_PER_CONFIG == harness_options.SEEDS_PER_CONFIG
    built = JudgeFlags(device="cpu").options()
    assert built == EvalOptions(device="cpu")


def test_the_judging_flags_become_eval_options_checked_once() -> None:
    flags = JudgeFlags(device="cpu", seeds=2, time_limit=7.5, memory_limit=0.5, baselines="compile", l2="hot")
    built = flags.options()
    assert (built.seeds_per_config, built.call_timeout_s, built.memory_limit_bytes) == (2, 7.5, 2**29)
    assert (built.baselines, built.l2_state) == (("eager", "compile"), "hot")
    assert flags.given() == ["--device", "--seeds", "--time-limit", "--memory-limit", "--baselines", "--l2"]
    for bad, message in (
        (JudgeFlags(device="cpu", seeds=0), "--seeds must be at least 1"),
        (JudgeFlags(device="cpu", rules="loose"), "--rules must be strict or kernelbench, not 'loose'"),
        (JudgeFlags(device="cpu", l2="warm"), "--l2 must be cold or hot, not 'warm'"),
        (JudgeFlags(device="tpu"), "--device must be 'cuda', 'cuda:N' or 'cpu'"),
    ):
        with pytest.raises(Exception, match=message):
            bad.options()


@pytest.mark.parametrize("command", JUDGING)
def test_seeds_below_one_is_one_error_in_every_judging_command(command: str, tmp_path: Path) -> None:
    args = {
        "eval": [str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/relu"],
        "ask": ["level1/relu", "--store", str(tmp_path / "r.db")],
        "optimize": ["level1/relu", "--store", str(tmp_path / "r.db")],
        "bench": [str(tmp_path), "--store", str(tmp_path / "r.db")],
    }[command]
    code, _, err = invoke(command, *args, "--device", "cpu", "--seeds", "0")
    assert code == 2 and err.strip() == "error: --seeds must be at least 1 (input sets checked per config)"


@needs_no_gpu
@pytest.mark.parametrize(
    "args",
    [
        ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmax"],
        ["ask", "level1/softmax", "--model", "openai:gpt-5-mini"],
        ["optimize", "level1/softmax", "--model", "openai:gpt-5-mini"],
        ["bench", "--model", "openai:gpt-5-mini", "--task", "level1/softmax"],
    ],
)
def test_without_a_gpu_every_judging_command_refuses_with_one_message(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(*args)
    assert code == 2 and out == ""
    assert err.strip() == f"error: {NO_GPU_ERROR}"
    assert list(tmp_path.iterdir()) == [], "nothing written"


@needs_no_gpu
@pytest.mark.parametrize(
    "args",
    [["show", "level1/relu", "--json"], ["prompt", "level1/relu"], ["device", "--no-measure", "--json"]],
)
def test_without_a_gpu_a_describing_command_says_it_describes_the_cpu(args: list[str]) -> None:
    code, out, err = invoke(*args)
    assert code == 0 and out
    assert err.strip() == f"note: {NO_GPU}; using the CPU (--device cpu chooses it without this note)"
    assert invoke(*args, "--device", "cpu")[2] == ""


@pytest.mark.parametrize(
    "args",
    [
        ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmaxx", "--device", "cpu"],
        ["show", "level1/softmaxx"],
        ["prompt", "--task", "level1/softmaxx", "--device", "cpu"],
        ["ask", "level1/softmaxx", "--device", "cpu"],
        ["optimize", "--task", "level1/softmaxx", "--device", "cpu"],
        ["bench", "--model", "openai:fake", "--task", "level1/softmaxx", "--device", "cpu"],
    ],
)
def test_every_command_naming_a_task_says_did_you_mean(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke(*args)
    assert code == 2 and "unknown task 'level1/softmaxx'; did you mean level1/softmax," in err, err
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_resume_takes_the_runs_own_options(tmp_path: Path) -> None:
    code, _, err = invoke(
        "optimize", "--resume", "optimize-1", "--seeds", "2", "--store", str(tmp_path / "r.db")
    )
    assert code == 2 and "--resume goes on with the run's own task and options; drop --seeds" in err
    code, _, err = invoke("optimize", "--resume", "optimize-1", "--store", str(tmp_path / "r.db"))
    assert code == 2 and f"no run store at {tmp_path / 'r.db'}" in err
    assert list(tmp_path.iterdir()) == [], "going on with a run never makes a store"

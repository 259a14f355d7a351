"""nvcc for one `.cu` file, its host side and its device side compiled at once.

For `nvcc -c x.cu -o x.o`, nvcc runs its phases one after another: the host side (preprocessing, then
cudafe++ splitting out the host code), the device side (preprocessing, cicc, ptxas, fatbinary), then the
host compiler over cudafe++'s output with the device code embedded. Over PyTorch's headers (every
`load_inline` extension) cudafe++, cicc and the host compile each take 11 to 15 s on the H100 machine,
so the two sides in turn put ~13 s more on a build than they need.

One thing ties the two sides: the module id, which cudafe++ makes (from what it parsed) and cicc reads.
This program writes a module id first, derived from the source's path and contents as cudafe++'s is,
has cudafe++ read it instead of making it, and runs the two sides side by side; the host compile waits
for both. Every command is nvcc's own, from `nvcc --dryrun`, with its flags: the object is nvcc's
object but for the module id's letters.

What it does not recognise goes to nvcc unchanged: another mode (preprocessing only, relocatable device
code, linking, several sources), a plan of phases it does not expect, a dependency option other than
`-MD -MF FILE`. A phase that fails shows the output nvcc would have shown (the phases before it and
the failing one, in nvcc's order) and exits with its status.

It runs as a program (`python -I -S nvcc_phases.py ARGS…`, what torch's build calls through
PYTORCH_NVCC, see `command`), so it imports nothing but the standard library.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Options under which nvcc's plan is not one source's compile to one object: left to nvcc.
OTHER_MODES = frozenset(
    {"--dryrun", "-dryrun", "-E", "--preprocess", "-M", "--generate-dependencies", "-MM"}
    | {"--generate-nonsystem-dependencies", "-MMD", "-MP", "-MT", "-MQ", "--generate-dependency-targets"}
    | {"-rdc", "--relocatable-device-code", "-dc", "--device-c", "-dw", "--device-w"}
    | {"-dlink", "--device-link", "-lib", "--lib", "-link", "--link", "-run", "--run"}
    | {"-ptx", "--ptx", "-cubin", "--cubin", "-fatbin", "--fatbin", "-optix-ir"}
    | {"-keep", "--keep", "-keep-dir", "--keep-dir", "-save-temps", "--save-temps"}
    | {"-odir", "--output-directory", "-time", "--time"}
)
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
MODULE_ID_OPTION = re.compile(r'--module_id_file_name\s+"([^"]+)"')


class Unrecognised(Exception):
    """nvcc's command line or plan is not the one this program splits: nvcc runs it itself."""


@dataclass
class Plan:
    """nvcc's phases for one source, sorted into the two sides and the last step; `order` is all of them
    in nvcc's order, as they will run."""

    environment: dict[str, str]  # nvcc's variables, set for each phase
    host: list[str] = field(default_factory=list)
    device: list[str] = field(default_factory=list)
    last: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    module_id_file: str = ""

    def add(self, side: list[str], command: str) -> None:
        side.append(command)
        self.order.append(command)

    def write_dependencies(self, depfile: str, output: str) -> None:
        """Have the host preprocessing write the dependency file that `-MD -MF` asked nvcc for."""
        index = next(i for i, text in enumerate(self.host) if _tool(text) != "cudafe++")
        before, after = self.host[index], with_dependencies(self.host[index], depfile, output)
        self.host[index] = self.order[self.order.index(before)] = after


def real_nvcc() -> str:
    """The nvcc torch's build would have run: CUDA_HOME's (or CUDA_PATH's), else the one on PATH, else
    /usr/local/cuda's."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def command(python: str | None = None) -> str:
    """PYTORCH_NVCC's value that runs this program (torch's build writes it into its ninja file as is)."""
    return f"{shlex.quote(python or sys.executable)} -I -S {shlex.quote(str(Path(__file__).resolve()))}"


@dataclass(frozen=True)
class Arguments:
    """An nvcc command line this program can split: one source, one object, maybe a dependency file."""

    dryrun_args: list[str]  # the command line without its dependency options
    source: str
    output: str
    depfile: str | None


def parse_arguments(args: list[str]) -> Arguments:
    """The source, object and dependency file of a compile; Unrecognised for anything else."""
    if any(arg in OTHER_MODES or arg.split("=", 1)[0] in OTHER_MODES for arg in args):
        raise Unrecognised("another mode")
    rest, depfile, wants_deps, output = [], None, False, None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-MD":
            wants_deps = True
        elif arg == "-MF" and index + 1 < len(args):
            depfile = args[index + 1]
            index += 1
        elif arg in ("-o", "--output-file") and index + 1 < len(args):
            if output is not None:
                raise Unrecognised("two outputs")
            output = args[index + 1]
            rest += [arg, output]
            index += 1
        else:
            rest.append(arg)
        index += 1
    sources = [arg for arg in rest if arg.endswith(".cu") and not arg.startswith("-")]
    if "-c" not in rest or output is None or len(sources) != 1:
        raise Unrecognised("not a compile of one .cu file to one object")
    if wants_deps != (depfile is not None):
        raise Unrecognised("a dependency option other than -MD -MF FILE")
    return Arguments(rest, sources[0], output, depfile)


def _tool(command: str) -> str:
    first = shlex.split(command)[0] if command.strip() else ""
    return os.path.basename(first)


def _value(text: str) -> str:
    """A variable's value as nvcc prints it: one shell word unquoted, several words kept as printed."""
    try:
        words = shlex.split(text)
    except ValueError:
        return text
    return words[0] if len(words) == 1 else text.strip() if words else ""


def make_plan(dryrun: str) -> Plan:
    """Sort the lines of `nvcc --dryrun` (on its stderr, each after `#$ `) into a Plan, or Unrecognised
    where they are not the plan of a whole-program compile of one source."""
    environment, commands = dict(os.environ), []
    for line in dryrun.splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].rstrip()
        if assignment := ASSIGNMENT.match(text):
            environment[assignment.group(1)] = _value(assignment.group(2))
        else:
            commands.append(text)
    plan = Plan(environment)
    cudafe = [c for c in commands if _tool(c) == "cudafe++"]
    if len(cudafe) != 1 or "--gen_module_id_file" not in cudafe[0]:
        raise Unrecognised("no single cudafe++ making the module id")
    module_id = MODULE_ID_OPTION.search(cudafe[0])
    if module_id is None:
        raise Unrecognised("cudafe++ names no module id file")
    plan.module_id_file = module_id.group(1)
    for text in commands:
        tool, words = _tool(text), text.split()
        if tool == "cudafe++":
            plan.add(plan.host, text.replace("--gen_module_id_file", "", 1))
        elif tool in ("cicc", "ptxas", "fatbinary"):
            found = MODULE_ID_OPTION.search(text)
            if tool == "cicc" and (found is None or found.group(1) != plan.module_id_file):
                raise Unrecognised("cicc reads another module id")
            plan.add(plan.device, text)
        elif "-E" in words:  # the host compiler preprocessing: the device side's defines __CUDA_ARCH__
            plan.add(plan.device if "-D__CUDA_ARCH__=" in text else plan.host, text)
        elif "-c" in words and text is commands[-1]:
            plan.add(plan.last, text)
        else:
            raise Unrecognised(f"a phase not expected: {tool}")
    preprocess = [c for c in plan.host if _tool(c) != "cudafe++"]
    if len(preprocess) != 1 or not plan.last or not any(_tool(c) == "cicc" for c in plan.device):
        raise Unrecognised("not host preprocessing, cudafe++, the device phases and one host compile")
    return plan


def module_id(source: str) -> str:
    """A module id in cudafe++'s form (`_<hex>_<length>_<name>_<hex>`), from the source's path and
    contents: one per source file and version, as the symbols of internal linkage that carry it need."""
    path = Path(source).resolve()
    name = re.sub(r"[^A-Za-z0-9]", "_", path.name)
    where = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    what = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    return f"_{where}_{len(name)}_{name}_{what}"


def with_dependencies(command: str, depfile: str, output: str) -> str:
    """The host preprocessing, also writing the dependency file that `-MD -MF` asked nvcc for."""
    return f"{command} -MD -MF {shlex.quote(depfile)} -MT {shlex.quote(output)}"


@dataclass
class Ran:
    """A phase that ran: its exit status and what it printed."""

    status: int
    output: bytes


def _run_side(commands: list[str], environment: dict[str, str], ran: dict[str, Ran]) -> None:
    """One side's phases in turn, each under nvcc's variables; it stops at the first that fails."""
    for text in commands:
        done = subprocess.run(
            ["/bin/sh", "-c", text], env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        ran[text] = Ran(done.returncode, done.stdout)
        if done.returncode != 0:
            return


def run(plan: Plan) -> int:
    """The two sides side by side, then the last step; each phase's output shown in nvcc's order, up to
    the first phase that failed, whose status is returned."""
    ran: dict[str, Ran] = {}
    sides = [
        threading.Thread(target=_run_side, args=(side, plan.environment, ran))
        for side in (plan.host, plan.device)
    ]
    for side in sides:
        side.start()
    for side in sides:
        side.join()
    if all(text in ran and ran[text].status == 0 for text in plan.host + plan.device):
        _run_side(plan.last, plan.environment, ran)
    for text in plan.order:
        if text not in ran:
            continue
        sys.stderr.buffer.write(ran[text].output)  # the tools' diagnostics, where nvcc leaves them
        sys.stderr.flush()
        if ran[text].status != 0:
            return ran[text].status
    return 0


def main(args: list[str]) -> int:
    nvcc = real_nvcc()
    try:
        arguments = parse_arguments(args)
    except Unrecognised:
        try:
            os.execv(nvcc, [nvcc, *args])
        except OSError as exc:
            print(f"nvcc_phases: cannot run {nvcc}: {exc.strerror}", file=sys.stderr)
            return 127
    keep = tempfile.mkdtemp(prefix=".nvcc-phases-", dir=os.path.dirname(os.path.abspath(arguments.output)))
    try:
        dryrun = subprocess.run(
            [nvcc, "--dryrun", *arguments.dryrun_args, "--keep", "--keep-dir", keep],
            capture_output=True,
            text=True,
        )
        try:
            if dryrun.returncode != 0:
                raise Unrecognised("nvcc --dryrun failed")
            plan = make_plan(dryrun.stderr)
        except Unrecognised:
            return subprocess.run([nvcc, *args]).returncode
        Path(plan.module_id_file).write_text(module_id(arguments.source))
        if arguments.depfile is not None:
            plan.write_dependencies(arguments.depfile, arguments.output)
        return run(plan)
    finally:
        shutil.rmtree(keep, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

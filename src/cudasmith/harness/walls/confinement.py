"""How the kernel holds a process to a sandbox policy (sandbox.py says which, and why).

- **Landlock**: a ruleset of what may be done below each path; whatever no rule allows is refused with
  EACCES. It also refuses mounts, tracing processes outside the sandbox and, from ABI 6, signalling them.
- **A user and mount namespace**: every mount read-only but the write roots (EROFS elsewhere), what must
  stay unread covered by empty mounts.

Under both, the process writes its own /proc entry, opens only the device nodes listed here, and then
gives up every capability (drop_capabilities), so that a worker started by root cannot undo any of it.
Both must run in a single-threaded process (the supervisor runs them between fork and exec) and raise
OSError where the kernel refuses.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

PROC = "/proc"
# /proc's links to the process that reads them: they resolve to its own entry, which is allowed.
PROC_LINKS = ("self", "thread-self")
DEVICES = "/dev"
# Shared memory carries CPU outputs to the judge: a write root.
SHARED_MEMORY = "/dev/shm"
# The device nodes a worker opens (read, write, ioctl), by name below /dev: the null and random ones,
# terminals, and a GPU's (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/…; DRM's dri/). Never a disk: root
# reads and writes one raw, whatever the file system's rules, and no capability is needed for that.
DEVICE_NAMES = ("null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts")
DEVICE_PREFIXES = ("nvidia", "dri")

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every architecture.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
# Rights of each ABI: 1 knows bits 0-12 (read, write, make and remove each kind of file); 2 adds
# REFER (links and renames across folders), 3 TRUNCATE, 5 IOCTL_DEV.
FS_ABI1 = (1 << 13) - 1
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
SCOPE_SIGNAL = 1 << 1  # ABI 6: no signals to processes outside the sandbox (the judge)

# Mounts (include/uapi/linux/mount.h, sched.h).
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 4096, 16384, 1 << 18
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NODEV = 1, 4

# Capabilities (include/uapi/linux/prctl.h, securebits.h, capability.h).
PR_GET_SECUREBITS, PR_SET_SECUREBITS = 27, 28
# Root gets no capability from exec (NOROOT), and no process can take that back (LOCKED).
SECBITS_NO_ROOT = (1 << 0) | (1 << 1)
CAPABILITY_VERSION_3 = 0x20080522


@dataclass(frozen=True)
class Policy:
    """What one worker may touch: `read` roots (read and execute), `write` roots (everything), and what the
    namespace mechanism must cover (`hide`); `scratch` is the worker's own folder, removed afterwards."""

    scratch: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    hide: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        return cls(data["scratch"], *(tuple(data[key]) for key in ("read", "write", "hide")))


# -- Landlock ------------------------------------------------------------------------------------


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (or it is switched off)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(
        SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION
    )
    return max(int(version), 0)


def _handled(abi: int) -> int:
    rights = FS_ABI1
    rights |= FS_REFER if abi >= 2 else 0
    rights |= FS_TRUNCATE if abi >= 3 else 0
    rights |= FS_IOCTL_DEV if abi >= 5 else 0
    return rights


def own_proc_entry() -> str:
    """The calling process's own /proc entry, which a confined process may write as well as read.

    CUDA's cuInit names the driver's threads by writing /proc/self/task/<tid>/comm and fails (error 304,
    "OS call failed") where it cannot. Allowing it is safe: a process may already rewrite its own memory
    and its threads' names, and the kernel refuses a comm write to any other process (EINVAL)."""
    return f"{PROC}/{os.getpid()}"


def device_nodes() -> list[str]:
    """The device nodes (and folders of them) below /dev that a confined process may open."""
    try:
        entries = list(os.scandir(DEVICES))
    except OSError:
        return []
    allowed = (e for e in entries if e.name in DEVICE_NAMES or e.name.startswith(DEVICE_PREFIXES))
    return sorted(e.path for e in allowed if not e.is_symlink())


def machine_proc() -> list[str]:
    """What of /proc, besides its own entry, a confined process reads: the machine's entries, never another
    process's (a judge's environment holds its API keys; Landlock's ptrace rule guards memory, not environ).
    Listed by the parent when it makes a policy: a confined process may not list /proc itself."""
    return sorted(e.path for e in os.scandir(PROC) if not e.name.isdigit() and e.name not in PROC_LINKS)


def apply_landlock(policy: Policy, abi: int) -> str:
    """Confine this process (and all it will start) to the policy; raises OSError where it cannot."""
    libc = _libc()
    handled = _handled(abi)
    read_rights = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    device_rights = (FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled
    # Its own /proc entry: read, and written in place (fopen "w" truncates), nothing made or removed.
    own_rights = (FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_TRUNCATE) & handled
    attr = _RulesetAttr(handled, 0, SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8  # older kernels refuse fields they do not know
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        rules = [(p, read_rights) for p in policy.read] + [(p, device_rights) for p in device_nodes()]
        rules += [
            (DEVICES, FS_READ_DIR),
            (own_proc_entry(), own_rights),
            *((p, handled) for p in policy.write),
        ]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a root that is not there (/lib32) needs no rule
            try:
                if not os.path.isdir(path):  # a rule on a file takes only the rights a file has
                    rights &= FS_FILE_RIGHTS
                rule = _PathBeneathAttr(rights & handled, fd)
                if libc.syscall(
                    SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0
                ):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0):
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return f"landlock (ABI {abi})"


# -- user and mount namespace ---------------------------------------------------------------------


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]  # fmt: skip


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), what)


def apply_namespace(policy: Policy) -> str:
    """Enter a user and mount namespace whose mounts are read-only but the write roots and the process's
    own /proc entry, with the hidden paths covered and only the listed device nodes able to open; raises
    OSError where the OS forbids it. Must run in a single-threaded process."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    # Files are covered by an empty one (made read-only with the rest): /dev/null would take writes.
    empty = os.path.join(policy.scratch, ".covered")
    Path(empty).touch(mode=0o400)
    # Device nodes: /dev's mount gets nodev (no node below it opens), each node allowed a mount of its own.
    _check(libc.mount(DEVICES.encode(), DEVICES.encode(), None, MS_BIND | MS_REC, None), f"bind {DEVICES}")
    for node in device_nodes():
        _check(libc.mount(node.encode(), node.encode(), None, MS_BIND | MS_REC, None), f"bind {node}")
    no_devices = _MountAttr(MOUNT_ATTR_NODEV, 0, 0, 0)
    size = ctypes.c_size_t(ctypes.sizeof(_MountAttr))
    _check(
        libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, DEVICES.encode(), 0, ctypes.byref(no_devices), size),
        "nodev",
    )
    # Each write root its own mount, so it can be made writable again; the process's own /proc entry too,
    # and that alone: the rest of /proc (another process's entries, /proc/sys) stays read-only.
    writable = (*policy.write, own_proc_entry())
    for path in writable:
        if os.path.isdir(path):
            _check(libc.mount(path.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
    for path in policy.hide:
        if os.path.isdir(path) and not os.path.islink(path):
            options = b"size=4k,mode=0500"
            _check(
                libc.mount(b"none", path.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, options), path
            )
        elif os.path.isfile(path) and not os.path.islink(path):
            _check(libc.mount(empty.encode(), path.encode(), None, MS_BIND, None), f"cover {path}")
    read_only = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    _check(
        libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, ctypes.byref(read_only), size), "ro /"
    )
    read_write = _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)
    for path in writable:
        if os.path.isdir(path):
            _check(
                libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), 0, ctypes.byref(read_write), size),
                path,
            )
    return "mount namespace"


# -- capabilities ---------------------------------------------------------------------------------


class _CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapabilitySet(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Give up every capability, for this process and all it will exec. A worker started by root would
    otherwise keep them: in the namespace it could unmount what covers the store and remount any folder
    writable; under Landlock, load a kernel module or reach I/O ports. A non-root worker has none to lose."""
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")  # no file capabilities either
    bits = libc.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0)
    wanted = bits | SECBITS_NO_ROOT
    # Setting them needs CAP_SETPCAP, which a process not root has not: exec grants it nothing anyway.
    if bits != wanted and libc.prctl(PR_SET_SECUREBITS, wanted, 0, 0, 0) and os.geteuid() == 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECUREBITS")
    none = (_CapabilitySet * 2)()  # two sets of 32 bits each: capabilities 0-31 and 32-63
    _check(libc.capset(ctypes.byref(_CapabilityHeader(CAPABILITY_VERSION_3, 0)), none), "capset")

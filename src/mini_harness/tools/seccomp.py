"""The seccomp filter every sandboxed program runs under: system calls a confined command
never needs are refused with EPERM.

bubblewrap already sets `no_new_privs` (a setuid program gains nothing) and drops every
capability; the filter is the second wall, for the kernel interfaces an unprivileged
process can still reach, and for the ones that would matter if a capability came back:

- other processes: ptrace, process_vm_readv/writev, pidfd_getfd;
- mounts and namespaces: mount, umount2, pivot_root, chroot, the new mount API (fsopen,
  fsconfig, fsmount, fspick, move_mount, open_tree, open_tree_attr, mount_setattr),
  unshare, setns;
- the kernel itself: kexec_load, kexec_file_load, init_module, finit_module,
  delete_module, bpf, perf_event_open, userfaultfd, reboot, swapon, swapoff, acct;
- the kernel keyrings: keyctl, add_key, request_key;
- io_uring (io_uring_setup, _enter, _register): its operations open sockets and files
  without passing through the calls filtered here;
- `socket(AF_UNIX, ...)`: no Unix socket can be made, so none of the host's can be
  connected to, wherever it is (abstract ones are in the host's network namespace, out of
  reach already). `socketpair()` is a call of its own and keeps working.

The filter is a classic BPF program assembled here (weighed and not taken: libseccomp's
Python binding, a system package outside any virtualenv, and `pyseccomp`, an unmaintained
ctypes wrapper over a library that may be absent). It checks the architecture first: a
call made through another ABI (32-bit x86, x32) has other numbers, so it ends the process
instead. Tables exist for x86_64 and aarch64; on another machine the sandbox runs without
the filter (`program` returns None). bubblewrap loads the program (`--seccomp FD`) right
before it starts the command.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

REFUSED: Final = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "open_tree_attr", "mount_setattr", "unshare", "setns",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
    "perf_event_open", "userfaultfd", "reboot", "swapon", "swapoff", "acct",
    "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)  # fmt: skip
"""System calls refused whatever their arguments; `socket` is refused for AF_UNIX only."""

AF_UNIX: Final = 1
EPERM: Final = 1

# linux/audit.h: EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
_X86_64: Final = 0xC000003E
_AARCH64: Final = 0xC00000B7
_X32_SYSCALL_BIT: Final = 0x40000000


@attrs.frozen
class Architecture:
    """One architecture's seccomp identity (AUDIT_ARCH_*) and system call numbers."""

    audit_arch: int
    numbers: Mapping[str, int]
    x32_bit: bool = False  # x86_64: calls with this bit set are x32's, numbered otherwise


_NUMBERS: Final = {  # name: (x86_64, aarch64's, which is the generic table)
    "socket": (41, 198), "ptrace": (101, 117), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "unshare": (272, 97), "setns": (308, 268),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105),
    "finit_module": (313, 273), "delete_module": (176, 106), "bpf": (321, 280),
    "perf_event_open": (298, 241), "userfaultfd": (323, 282), "reboot": (169, 142),
    "swapon": (167, 224), "swapoff": (168, 225), "acct": (163, 89), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218),
    # numbered alike on every architecture since Linux 5.1
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "pidfd_getfd": (438, 438), "mount_setattr": (442, 442), "open_tree_attr": (467, 467),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
}  # fmt: skip

ARCHITECTURES: Final = {
    "x86_64": Architecture(
        _X86_64, {name: pair[0] for name, pair in _NUMBERS.items()}, x32_bit=True
    ),
    "aarch64": Architecture(_AARCH64, {name: pair[1] for name, pair in _NUMBERS.items()}),
}
"""The machines (`os.uname().machine`) a filter can be built for."""

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
# Both architectures are little-endian: an argument's low 32 bits come first.
_NR: Final = 0
_ARCH: Final = 4
_ARG0_LOW: Final = 16

# linux/filter.h and linux/seccomp.h
_LD_W_ABS: Final = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K: Final = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K: Final = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K: Final = 0x06  # BPF_RET | BPF_K
RET_ALLOW: Final = 0x7FFF0000
RET_ERRNO: Final = 0x00050000
RET_KILL_PROCESS: Final = 0x80000000


@attrs.frozen
class _Op:
    """One instruction; a jump names its targets by label, resolved by `_assemble`."""

    code: int
    k: int
    true: str | None = None
    false: str | None = None
    label: str | None = None


def _assemble(ops: Sequence[_Op]) -> bytes:
    """The program as the kernel reads it: `struct sock_filter {u16 code; u8 jt, jf; u32 k}`
    in the machine's byte order; jumps are forward offsets from the next instruction."""
    where = {op.label: index for index, op in enumerate(ops) if op.label is not None}
    out = bytearray()
    for index, op in enumerate(ops):
        jumps = []
        for target in (op.true, op.false):
            offset = 0 if target is None else where[target] - index - 1
            if not 0 <= offset <= 255:
                raise ValueError(f"jump to {target!r} out of reach")
            jumps.append(offset)
        out += struct.pack("=HBBI", op.code, jumps[0], jumps[1], op.k)
    return bytes(out)


def build(arch: Architecture) -> bytes:
    """The filter for `arch`: another ABI ends the process, REFUSED calls and
    `socket(AF_UNIX, ...)` fail with EPERM, everything else is allowed."""
    ops = [
        _Op(_LD_W_ABS, _ARCH),
        _Op(_JEQ_K, arch.audit_arch, false="kill"),
        _Op(_LD_W_ABS, _NR),
    ]
    if arch.x32_bit:
        ops.append(_Op(_JGE_K, _X32_SYSCALL_BIT, true="kill"))
    ops += [_Op(_JEQ_K, arch.numbers[name], true="refuse") for name in REFUSED]
    ops += [
        _Op(_JEQ_K, arch.numbers["socket"], false="allow"),
        # The kernel reads the domain as an int: only the low half of the register counts.
        _Op(_LD_W_ABS, _ARG0_LOW),
        _Op(_JEQ_K, AF_UNIX, true="refuse"),
        _Op(_RET_K, RET_ALLOW, label="allow"),
        _Op(_RET_K, RET_ERRNO | EPERM, label="refuse"),
        _Op(_RET_K, RET_KILL_PROCESS, label="kill"),
    ]
    return _assemble(ops)


@functools.cache
def program(machine: str | None = None) -> bytes | None:
    """The compiled filter for `machine` (default: this one), None when there is no table
    for it."""
    arch = ARCHITECTURES.get(machine or os.uname().machine)
    return None if arch is None else build(arch)

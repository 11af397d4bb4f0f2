"""The seccomp filter's program, read instruction by instruction, and its numbers checked
against the kernel's own headers (the behaviour inside the sandbox is tested in
test_sandbox.py::TestSystemCalls)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from mini_harness.tools.seccomp import (
    AF_UNIX,
    ARCHITECTURES,
    EPERM,
    REFUSED,
    RET_ALLOW,
    RET_ERRNO,
    RET_KILL_PROCESS,
    build,
    program,
)

HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),  # aarch64 uses the generic table
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
REFUSE = RET_ERRNO | EPERM


def run(filter_bytes: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel would decide: classic BPF over `struct seccomp_data`, the few
    instructions a seccomp filter uses (load word, jump if equal / greater or equal,
    return)."""
    padded = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("=iIQ6Q", nr, arch, 0, *padded)
    ops = [struct.unpack_from("=HBBI", filter_bytes, i) for i in range(0, len(filter_bytes), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x06:
            return int(k)
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def header_numbers(machine: str) -> dict[str, int]:
    text = HEADERS[machine].read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)\b", text)}


@pytest.mark.parametrize("machine", sorted(ARCHITECTURES))
class TestTheProgram:
    def test_refused_calls_get_eperm(self, machine: str) -> None:
        """Every refused call, whatever its arguments, fails with EPERM."""
        arch = ARCHITECTURES[machine]
        filter_bytes = build(arch)
        for name in REFUSED:
            decided = run(filter_bytes, arch.numbers[name], arch.audit_arch, (1, 2, 3))
            assert decided == REFUSE, name

    def test_only_unix_sockets_are_refused(self, machine: str) -> None:
        """socket(AF_UNIX) is refused, also with junk in the register's upper half (the
        kernel reads an int); AF_INET and AF_INET6 sockets, and socketpair, are not."""
        arch = ARCHITECTURES[machine]
        filter_bytes = build(arch)
        socket = arch.numbers["socket"]
        assert run(filter_bytes, socket, arch.audit_arch, (AF_UNIX, 1)) == REFUSE
        assert run(filter_bytes, socket, arch.audit_arch, ((7 << 32) | AF_UNIX,)) == REFUSE
        assert run(filter_bytes, socket, arch.audit_arch, (2, 1)) == RET_ALLOW
        assert run(filter_bytes, socket, arch.audit_arch, (10, 1)) == RET_ALLOW
        numbers = header_numbers(machine) if HEADERS[machine].exists() else {}
        socketpair = numbers.get("socketpair")
        if socketpair is not None:
            assert run(filter_bytes, socketpair, arch.audit_arch, (AF_UNIX, 1)) == RET_ALLOW

    def test_other_calls_are_allowed(self, machine: str) -> None:
        """Calls off the list (read, write, openat, ...) pass."""
        arch = ARCHITECTURES[machine]
        filter_bytes = build(arch)
        refused = {arch.numbers[name] for name in (*REFUSED, "socket")}
        for nr in range(470):
            if nr not in refused:
                assert run(filter_bytes, nr, arch.audit_arch) == RET_ALLOW, nr

    def test_another_abi_ends_the_process(self, machine: str) -> None:
        """A call made through another ABI (its numbers mean other calls) is never
        allowed: the process ends."""
        arch = ARCHITECTURES[machine]
        filter_bytes = build(arch)
        for other in (0x40000003, 0x40000028, 0, arch.audit_arch ^ 1):  # i386, arm, ...
            assert run(filter_bytes, 0, other) == RET_KILL_PROCESS

    def test_the_numbers_are_the_kernels(self, machine: str) -> None:
        """Each number in the table is the one the kernel's header gives (names newer than
        the installed header are left out)."""
        if not HEADERS[machine].exists():
            pytest.skip(f"{HEADERS[machine]} is not installed (Debian: linux-libc-dev)")
        known = header_numbers(machine)
        checked = {name: nr for name, nr in ARCHITECTURES[machine].numbers.items() if name in known}
        assert checked == {name: known[name] for name in checked}
        assert len(checked) >= len(REFUSED)  # all but the newest few are in any header


def test_x32_calls_end_the_process() -> None:
    """On x86_64, a call with the x32 bit set (numbered otherwise) ends the process."""
    arch = ARCHITECTURES["x86_64"]
    assert run(build(arch), 0x40000000 | 101, arch.audit_arch) == RET_KILL_PROCESS
    assert run(build(arch), 0x40000000 | 0, arch.audit_arch) == RET_KILL_PROCESS


def test_an_unknown_machine_has_no_filter() -> None:
    """A machine without a table gets no filter (the sandbox then runs without one)."""
    assert program("riscv64") is None
    assert program("x86_64") == build(ARCHITECTURES["x86_64"])

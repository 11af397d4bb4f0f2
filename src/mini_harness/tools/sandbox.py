"""The sandbox that `run_command` and the git tools run their programs in.

The threat is a hostile model whose calls are approved automatically, with the harness
possibly running as root. Under bubblewrap a program gets:

- file system: the whole system read-only; the workspace writable (read-only for git); the
  agent's controls given as `read_only` (`.git`, `.mini-harness`, the open transcript)
  read-only inside it, so that writing through a link or a hard link fails too;
- homes: /root, /home and the caller's HOME hidden (`homes`): empty and read-only, HOME
  then a private writable directory in the sandbox's /tmp, and the programs the command
  may run from under a home (`toolchains`) bound read-only;
- sockets: its own /tmp, /run, /var/run and /dev, so the Unix sockets of the host under them
  (ssh-agent, Docker, D-Bus, X11) are not there; no Unix socket can be made at all
  (seccomp), so no host socket elsewhere can be reached either; its own network namespace,
  so no network, no loopback and no abstract sockets;
- system calls: `no_new_privs` (bubblewrap sets it: a setuid program gains nothing) and
  the seccomp filter of `seccomp`, which refuses what a confined command never needs;
- processes: its own PID namespace, a new session (no terminal to inject input into), killed
  with its parent; the call returns only when every process of the sandbox is gone;
- capabilities: its own user namespace with every capability dropped and no nested user
  namespace, so nothing can be remounted writable, even by root;
- environment: built from an allow-list (`allowed_environment`), never the caller's;
- resources: at most MAX_PROCESSES processes (the kernel does not enforce this for root),
  each with at most half the machine's memory as data, no core dumps.

Without bubblewrap, commands run unconfined with the same environment and limits (the tool's
description says so and the approval policy asks every time); git is safe either way,
because it never reads the repository's configuration (see git_dir).
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import select
import shutil
import signal
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

import attrs
import orjson

from mini_harness.tools import seccomp
from mini_harness.tools.homes import SANDBOX_HOME, Homes
from mini_harness.tools.process import DEFAULT_MAX_OUTPUT, Finished, run_bounded

PASSED_NAMES: Final = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "NO_COLOR",
})  # fmt: skip
"""Variables a command gets from the caller's environment, besides the locale's `LC_*`.
Everything else (API keys, tokens, SSH_AUTH_SOCK, cloud credentials) stays out, whatever
its name."""

MAX_PROCESSES: Final = 4096
SANDBOX_TIMEOUT: Final = 10.0  # how long the last processes of a sandbox get to be gone


def allowed_environment(
    environ: Mapping[str, str], redacted_names: Iterable[str] = ()
) -> dict[str, str]:
    """The variables of `environ` a command may see: the allow-list, less `redacted_names`."""
    dropped = set(redacted_names)
    return {
        name: value
        for name, value in environ.items()
        if (name in PASSED_NAMES or name.startswith("LC_")) and name not in dropped
    }


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 40


@attrs.frozen
class ResourceLimits:
    """rlimits set in the child between fork and exec (only `setrlimit` runs there)."""

    limits: tuple[tuple[int, int, int], ...]

    @classmethod
    def default(cls) -> ResourceLimits:
        """MAX_PROCESSES, half the memory as data per process, no core dumps; never above
        the caller's own hard limits."""
        wanted = (
            (resource.RLIMIT_NPROC, MAX_PROCESSES),
            (resource.RLIMIT_DATA, _physical_memory() // 2),
            (resource.RLIMIT_CORE, 0),
        )
        limits = []
        for which, value in wanted:
            _, hard = resource.getrlimit(which)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            limits.append((which, cap, cap))
        return cls(tuple(limits))

    def __call__(self) -> None:
        for which, soft, hard in self.limits:
            resource.setrlimit(which, (soft, hard))


@attrs.frozen
class Bubblewrap:
    """The bwrap program and what this one can do."""

    program: str
    disable_userns: bool  # bubblewrap 0.8+: no user namespace can be made inside

    def argv(
        self,
        command: Sequence[str],
        *,
        workspace: str,
        cwd: str,
        scratch: str,
        writable: bool,
        read_only: Sequence[str] = (),
        homes: Homes | None = None,
        info_fd: int | None = None,
        seccomp_fd: int | None = None,
    ) -> list[str]:
        """`command` wrapped in bubblewrap. `scratch` is an empty host directory that
        becomes the sandbox's /tmp, /run and /dev/shm (disk, not memory; removed after);
        `writable` says whether the workspace is; `seccomp_fd` is a descriptor to read the
        compiled seccomp filter from."""
        private = {"/tmp": "tmp", "/run": "run", "/dev/shm": "shm"}  # noqa: S108
        if os.path.isdir("/var/run") and not os.path.islink("/var/run"):
            private["/var/run"] = "run"
        args = [self.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for target, name in private.items():
            os.makedirs(os.path.join(scratch, name), exist_ok=True)
            args += ["--bind", os.path.join(scratch, name), target]
        homes = homes or Homes(())
        args += homes.argv()
        args += ["--bind" if writable else "--ro-bind", workspace, workspace]
        for path in read_only:
            args += ["--ro-bind", path, path]
        args += homes.sealed()
        args += [
            "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try",
            *(["--disable-userns"] if self.disable_userns else []),
            "--cap-drop", "ALL",
            "--new-session",
            "--die-with-parent",
            *(["--info-fd", str(info_fd)] if info_fd is not None else []),
            *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
            "--chdir", cwd,
            "--",
            *command,
        ]  # fmt: skip
        return args

    def works(self) -> bool:
        """True when a sandbox of this shape can be made here."""
        with (
            tempfile.TemporaryDirectory(prefix="mini-harness-probe-") as scratch,
            _seccomp_fd() as seccomp_fd,
        ):
            workspace = os.path.join(scratch, "ws")
            os.mkdir(workspace)
            probe = self.argv(
                ["true"],
                workspace=workspace,
                cwd=workspace,
                scratch=scratch,
                writable=True,
                homes=Homes.of(os.environ.get("HOME")),
                seccomp_fd=seccomp_fd,
            )
            fds = () if seccomp_fd is None else (seccomp_fd,)
            try:
                finished = run_bounded(
                    probe, cwd="/", env={}, timeout=SANDBOX_TIMEOUT, pass_fds=fds
                )
            except OSError:
                return False
        return finished.exit_code == 0


@functools.cache
def bubblewrap() -> Bubblewrap | None:
    """bubblewrap when it is installed and can make a sandbox here, else None."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    for disable_userns in (True, False):  # older bubblewraps lack --disable-userns
        candidate = Bubblewrap(found, disable_userns)
        if candidate.works():
            return candidate
    return None


NO_SANDBOX_MESSAGE: Final = (
    "A sandbox was required, but bubblewrap (Debian package bubblewrap) cannot run here"
)


def run_sandboxed(
    sandbox: Bubblewrap | None,
    command: Sequence[str],
    *,
    workspace: str,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    writable: bool,
    read_only: Sequence[str] = (),
    max_output: int = DEFAULT_MAX_OUTPUT,
    limits: ResourceLimits | None = None,
) -> Finished:
    """Run `command` in `sandbox` (or, when it is None, as is) with a private temporary
    directory as TMPDIR; when it returns, nothing the command started still runs. In the
    sandbox, a HOME that names a hidden home becomes SANDBOX_HOME, empty and writable."""
    with tempfile.TemporaryDirectory(prefix="mini-harness-command-") as scratch:
        env = dict(env)
        if sandbox is None:
            env["TMPDIR"] = scratch
            return run_bounded(
                command, cwd=cwd, env=env, timeout=timeout, max_output=max_output, preexec=limits
            )
        env["TMPDIR"] = "/tmp"  # noqa: S108 - the sandbox's own
        search = env.get("PATH", "").split(os.pathsep)
        if os.sep in command[0]:
            search.append(os.path.dirname(os.path.join(cwd, command[0])))
        homes = Homes.of(env.get("HOME"), [path for path in search if os.path.isabs(path)])
        if homes.hides(env.get("HOME")):
            os.makedirs(os.path.join(scratch, "tmp", "home"))
            env["HOME"] = SANDBOX_HOME
        with _SandboxInfo() as info, _seccomp_fd() as seccomp_fd:
            wrapped = sandbox.argv(
                command,
                workspace=workspace,
                cwd=cwd,
                scratch=scratch,
                writable=writable,
                read_only=read_only,
                homes=homes,
                info_fd=info.write_fd,
                seccomp_fd=seccomp_fd,
            )
            return run_bounded(
                wrapped,
                cwd=cwd,
                env=env,
                timeout=timeout,
                max_output=max_output,
                preexec=limits,
                pass_fds=(info.write_fd, *(() if seccomp_fd is None else (seccomp_fd,))),
                started=info.started,
            )


@contextlib.contextmanager
def _seccomp_fd() -> Iterator[int | None]:
    """The read end of a pipe holding this machine's seccomp filter (None: no filter for
    this architecture), for bubblewrap's --seccomp; closed on exit."""
    compiled = seccomp.program()
    if compiled is None:
        yield None
        return
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, compiled)  # a few hundred bytes: far below a pipe's buffer
        os.close(write_fd)
        write_fd = -1
        yield read_fd
    finally:
        os.close(read_fd)
        if write_fd != -1:
            os.close(write_fd)


class _SandboxInfo:
    """The sandbox's first process, learnt from bubblewrap's --info-fd, so that the call
    can end it and wait until it is gone: its PID namespace ends with it, and with the
    namespace every process in it (they are in a session of their own, out of reach of the
    process group that run_bounded kills)."""

    def __init__(self) -> None:
        self._read_fd, self.write_fd = os.pipe()
        self._write_open = True
        self._pidfd: int | None = None

    def started(self) -> None:
        """Called once bwrap runs: read which process the sandbox is (bwrap writes it,
        or closes the pipe when it fails before that)."""
        os.close(self.write_fd)
        self._write_open = False
        data = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(self._read_fd, 4096):
                data += chunk
        try:
            pid = orjson.loads(data)["child-pid"] if data else None
            if isinstance(pid, int):
                self._pidfd = os.pidfd_open(pid)
        except (orjson.JSONDecodeError, KeyError, TypeError, OSError, AttributeError):
            self._pidfd = None

    def __enter__(self) -> _SandboxInfo:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._write_open:  # bwrap never started
            os.close(self.write_fd)
        os.close(self._read_fd)
        if self._pidfd is None:
            return
        try:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            select.select([self._pidfd], [], [], SANDBOX_TIMEOUT)
        finally:
            os.close(self._pidfd)


@contextlib.contextmanager
def placeholders(paths: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """Empty directories made where bubblewrap will mount them read-only (so that a command
    cannot create a control such as `.mini-harness`), removed again afterwards if still
    empty; yields those it made (where the user cannot make one, neither can a command).
    Left only once the sandbox has ended, so nothing races the removal."""
    made: list[str] = []
    try:
        for path in paths:
            with contextlib.suppress(OSError):
                os.mkdir(path)
                made.append(path)
        yield tuple(made)
    finally:
        for path in made:
            with contextlib.suppress(OSError):
                os.rmdir(path)

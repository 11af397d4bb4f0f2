"""The sandbox run_command runs in: no capabilities, no host sockets, an allow-listed
environment, limits, and the agent's controls read-only; as root and as an unprivileged user."""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mini_harness
from mini_harness.errors import WorkspaceError
from mini_harness.tools.homes import SANDBOX_HOME
from mini_harness.tools.run_command import RunCommand
from mini_harness.tools.sandbox import MAX_PROCESSES, ResourceLimits, bubblewrap
from mini_harness.tools.seccomp import REFUSED
from mini_harness.tools.workspace import Workspace

NO_BWRAP = "bubblewrap cannot run here (see tests/tools/test_run_command.py)"
NOBODY = 65534
SRC = str(Path(mini_harness.__file__).parent.parent)
AS_ROOT = os.geteuid() == 0
# A Python every user can run inside the sandbox (the test venv's may live under /root).
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason=NO_BWRAP)

# Runs one run_command call as another user: argv[1] is a JSON object with the workspace,
# the protected files, the limits and the tool input; prints the output as JSON.
_CALL = """
import json, sys
from mini_harness.tools.run_command import RunCommand
from mini_harness.tools.sandbox import ResourceLimits, bubblewrap
from mini_harness.tools.workspace import Workspace
a = json.loads(sys.argv[1])
limits = ResourceLimits(tuple(map(tuple, a["limits"] or ()))) if a["limits"] else None
workspace = Workspace(a["ws"], protected=tuple(a["protected"]))
handler = RunCommand(workspace, bubblewrap(), limits=limits or ResourceLimits.default())
out = handler(a["input"])
print(json.dumps(out if isinstance(out, dict) else out.output))
"""

Call = Callable[..., dict[str, Any]]


def _unprivileged_sandbox_works() -> bool:
    if not AS_ROOT or shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(
        [*_as_nobody(), "bwrap", "--ro-bind", "/", "/", "--unshare-user", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def _as_nobody() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


USERS = [
    pytest.param("self", id="as-root" if AS_ROOT else "as-this-user"),
    pytest.param(
        "nobody",
        id="unprivileged",
        marks=pytest.mark.skipif(
            not _unprivileged_sandbox_works(),
            reason="needs root, setpriv and unprivileged user namespaces",
        ),
    ),
]


@pytest.fixture(name="base")
def _base() -> Iterator[Path]:
    """A directory every user can reach (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="mini-harness-sandbox-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.fixture(name="ws")
def _ws(base: Path) -> Path:
    """A workspace with a repository's .git, a policy and a transcript in it."""
    root = base / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".mini-harness").mkdir()
    (root / ".mini-harness" / "policy.toml").write_text("# the user's rules\n")
    (root / "logs").mkdir()
    (root / "logs" / "run.jsonl").write_text("{}\n")
    (root / "logs" / "run.jsonl.torn-1").write_text("torn\n")
    (root / "hello.txt").write_text("hello\n")
    return root


@pytest.fixture(name="user", params=USERS)
def _user(request: pytest.FixtureRequest) -> str:
    user: str = request.param
    return user


@pytest.fixture(name="call")
def _call(ws: Path, base: Path, user: str) -> Call:
    """Call run_command in `ws` as the fixture's user; the transcript is protected."""
    if user == "nobody":
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)

    def call(tool_input: dict[str, Any], *, limits: ResourceLimits | None = None) -> Any:
        protected = (str(ws / "logs" / "run.jsonl"),)
        if user == "self":
            chosen = limits or ResourceLimits.default()
            handler = RunCommand(Workspace(ws, protected=protected), bubblewrap(), limits=chosen)
            out = handler(tool_input)
            return out if isinstance(out, dict) else out.output
        payload = {
            "ws": str(ws),
            "protected": protected,
            "limits": limits.limits if limits else None,
            "input": tool_input,
        }
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": SRC, "LANG": "C.UTF-8"}
        done = subprocess.run(
            [*_as_nobody(), sys.executable, "-c", _CALL, json.dumps(payload)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return call


def shell(line: str, **extra: Any) -> dict[str, Any]:
    return {"argv": [line], "shell": True, **extra}


class TestPrivileges:
    def test_no_capabilities(self, call: Call) -> None:
        """Every capability is dropped: effective, permitted and bounding sets are empty."""
        out = call(shell("grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"))
        assert out["stdout"].split() == [
            "CapPrm:", "0000000000000000",
            "CapEff:", "0000000000000000",
            "CapBnd:", "0000000000000000",
        ]  # fmt: skip

    def test_nothing_is_remounted_writable(self, call: Call) -> None:
        """`mount -o remount,rw` of the root fails, and the system stays read-only."""
        probe = Path("/etc/mini-harness-sandbox-probe")
        out = call(shell(f"mount -o remount,rw,bind / ; touch {probe}; echo done"))
        assert "done" in out["stdout"]
        assert "Read-only file system" in out["stderr"]
        assert not probe.exists()

    def test_no_write_outside_the_workspace(self, call: Call, ws: Path, base: Path) -> None:
        """A directory beside the workspace, writable by the user, takes no write; the
        workspace does."""
        beside = base / "beside"
        beside.mkdir()
        beside.chmod(0o777)
        call(shell(f"touch {beside}/x made.txt"))
        assert (ws / "made.txt").exists()
        assert not (beside / "x").exists()

    def test_no_user_namespace_inside(self, call: Call) -> None:
        """No new user namespace (with its own capabilities) can be made inside."""
        sandbox = bubblewrap()
        assert sandbox is not None
        if not sandbox.disable_userns:
            pytest.skip("this bubblewrap cannot forbid user namespaces (before 0.8)")
        out = call(shell("unshare --user --map-root-user true && echo made"))
        assert "made" not in out["stdout"]


def _listen(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    path.chmod(0o777)
    return server


CONNECT = (
    "import os, socket, sys\n"
    "path = os.environ.get('SSH_AUTH_SOCK') or sys.argv[1]\n"
    "print('visible' if os.path.exists(path) else 'absent')\n"
    "try:\n"
    "    s = socket.socket(socket.AF_UNIX)\n"
    "    s.connect(path.replace('@', '\\0', 1) if path.startswith('@') else path)\n"
    "    print('connected')\n"
    "except OSError as exc:\n"
    "    print(type(exc).__name__, exc.errno)\n"
)


def _connect(call: Call, address: str) -> list[str]:
    """What the sandboxed CONNECT script printed, line by line."""
    out = call({"argv": [PYTHON, "-c", CONNECT, address]})
    assert out["exitCode"] == 0, out["stderr"]
    lines: list[str] = out["stdout"].splitlines()
    return lines


class TestSockets:
    def test_a_listener_under_tmp_is_unreachable(self, call: Call, base: Path) -> None:
        """A Unix socket in the host's /tmp is not there: /tmp is the sandbox's."""
        with _listen(base / "listener.sock"):
            printed = _connect(call, str(base / "listener.sock"))
        assert printed[0] == "absent"
        assert "connected" not in printed

    def test_the_ssh_agent_is_unreachable(
        self, call: Call, base: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """SSH_AUTH_SOCK is not passed, and the agent's socket is not there either."""
        agent = base / "ssh-agent"
        agent.mkdir(mode=0o777)
        agent.chmod(0o777)
        server = _listen(agent / "agent.1")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(agent / "agent.1"))
        with server:
            printed = _connect(call, str(agent / "agent.1"))
        assert printed[0] == "absent"
        assert "connected" not in printed

    def test_a_listener_under_run_is_unreachable(self, call: Call) -> None:
        """Sockets under /run (Docker's, D-Bus's, the user's runtime directory) are not
        there: /run is the sandbox's."""
        if not os.access("/run", os.W_OK):
            pytest.skip("/run is not writable here")
        directory = Path(tempfile.mkdtemp(dir="/run", prefix="mini-harness-test-"))
        directory.chmod(0o755)
        try:
            with _listen(directory / "daemon.sock"):
                printed = _connect(call, str(directory / "daemon.sock"))
        finally:
            shutil.rmtree(directory)
        assert printed[0] == "absent"
        assert "connected" not in printed

    def test_a_visible_listener_is_unreachable(self, call: Call, ws: Path) -> None:
        """A host socket the sandbox can see (here in the workspace; elsewhere a home or
        /var) cannot be connected to: no Unix socket can be made (EPERM)."""
        with _listen(ws / "daemon.sock"):
            printed = _connect(call, str(ws / "daemon.sock"))
        assert printed == ["visible", f"PermissionError {errno.EPERM}"]

    def test_an_abstract_listener_is_unreachable(self, call: Call) -> None:
        """A listener in the host's abstract namespace cannot be connected to."""
        name = f"mini-harness-test-{os.getpid()}-{time.monotonic_ns()}"
        server = socket.socket(socket.AF_UNIX)
        server.bind("\0" + name)
        server.listen()
        with server:
            printed = _connect(call, "@" + name)
        assert "connected" not in printed
        assert printed[-1].startswith(("PermissionError", "ConnectionRefusedError"))

    def test_socketpair_works(self, call: Call) -> None:
        """socketpair() (a pair of connected Unix sockets, used by many programs to talk to
        their own children) still works, and so do TCP sockets on the sandbox's loopback."""
        script = (
            "import socket\n"
            "a, b = socket.socketpair()\n"
            "a.sendall(b'ping'); print(b.recv(4).decode())\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "c = socket.create_connection(s.getsockname()); print('tcp')\n"
        )
        out = call({"argv": [PYTHON, "-c", script]})
        assert out["stdout"].split() == ["ping", "tcp"], out["stderr"]

    def test_the_listeners_are_reachable_without_the_sandbox(self, base: Path) -> None:
        """The same connections succeed outside the sandbox (the tests above bite)."""
        name = f"mini-harness-test-{os.getpid()}-{time.monotonic_ns()}"
        abstract = socket.socket(socket.AF_UNIX)
        abstract.bind("\0" + name)
        abstract.listen()
        with _listen(base / "listener.sock"), abstract:
            for address in (str(base / "listener.sock"), "@" + name):
                done = subprocess.run(
                    [sys.executable, "-c", CONNECT, address],
                    env={"PATH": os.environ["PATH"]},
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert done.stdout.splitlines()[-1] == "connected"


# Each refused call made with zero arguments (no pointer is followed); prints its errno.
SYSCALLS = """
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
result = {}
for name, nr in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(0)] * 6)
    result[name] = ctypes.get_errno() if done == -1 else "succeeded"
print(json.dumps(result))
"""
UNISTD = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


class TestSystemCalls:
    def test_no_new_privileges_and_a_filter(self, call: Call) -> None:
        """The command runs with no_new_privs (a setuid program gains nothing) and under a
        seccomp filter."""
        out = call(shell("grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"))
        assert out["stdout"].split() == ["NoNewPrivs:", "1", "Seccomp:", "2"]

    def test_refused_calls_fail_with_eperm(self, call: Call) -> None:
        """ptrace, mount, unshare, setns, keyctl, bpf, perf_event_open, kexec, module
        loading, io_uring and the rest of the list fail with EPERM (numbers from the
        kernel's header, not from the filter's table)."""
        if os.uname().machine != "x86_64" or not UNISTD.exists():
            pytest.skip("needs x86_64 and its unistd_64.h (Debian: linux-libc-dev)")
        known = {
            m[1]: int(m[2])
            for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)\b", UNISTD.read_text())
        }
        numbers = {name: known[name] for name in REFUSED if name in known}
        out = call({"argv": [PYTHON, "-c", SYSCALLS, json.dumps(numbers)]})
        assert json.loads(out["stdout"]) == dict.fromkeys(numbers, errno.EPERM), out["stderr"]

    def test_a_setuid_program_gains_nothing(self, call: Call, ws: Path, user: str) -> None:
        """A setuid-root program run by an unprivileged user stays unprivileged."""
        if user != "nobody":
            pytest.skip("only an unprivileged user can gain anything from setuid")
        program = ws / "setuid-id"
        shutil.copy("/usr/bin/id", program)
        os.chown(program, 0, 0)
        program.chmod(0o4755)
        out = call({"argv": [str(program), "-u"]})
        assert out["stdout"].strip() == str(NOBODY), out["stderr"]


@pytest.fixture(name="home")
def _home() -> Iterator[Path]:
    """A user's home under /home: a secret, and a toolchain (its bin and lib) a program
    elsewhere links to, as a virtualenv's python links to ~/.pyenv."""
    if not os.access("/home", os.W_OK):
        pytest.skip("/home is not writable here")
    path = Path(tempfile.mkdtemp(dir="/home", prefix="mini-harness-test-"))
    try:
        (path / ".ssh").mkdir()
        (path / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
        tool = path / ".local" / "tool"
        (tool / "bin").mkdir(parents=True)
        (tool / "lib").mkdir()
        (tool / "lib" / "greeting.txt").write_text("hello from the toolchain\n")
        (tool / "bin" / "greet").write_text(
            '#!/bin/sh\ncat "$(dirname "$(readlink -f "$0")")/../lib/greeting.txt"\n'
        )
        for directory, _, files in os.walk(path):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o755)
        yield path
    finally:
        shutil.rmtree(path)


class TestHomes:
    def test_homes_are_hidden(self, call: Call, home: Path) -> None:
        """What users keep in their homes (keys, tokens, other sessions) is not there, and
        nothing can be written there."""
        out = call(shell(f"cat {home}/.ssh/id_ed25519; ls -A /home /root; touch /home/x"))
        assert "PRIVATE KEY" not in out["stdout"]
        assert home.name not in out["stdout"]
        assert "Read-only file system" in out["stderr"]
        assert not Path("/home/x").exists()

    def test_home_is_private_and_writable(
        self, ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """HOME is an empty directory of the sandbox's own: a program can write its
        settings there, and nothing of it reaches the real home."""
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("PATH", "/usr/bin:/bin")
        handler = RunCommand(Workspace(ws), bubblewrap())
        script = 'echo "$HOME"; ls -A "$HOME"; echo note > "$HOME/made.txt"; cat "$HOME/made.txt"'
        out = handler(shell(script))
        assert isinstance(out, dict)
        assert out["stdout"] == f"{SANDBOX_HOME}\nnote\n", out["stderr"]
        assert not (home / "made.txt").exists()

    def test_a_toolchain_under_a_home_still_runs(self, call: Call, ws: Path, home: Path) -> None:
        """A program linked to a toolchain under a home (a virtualenv's python and
        ~/.pyenv) runs: its bin and lib directories stay, read-only; the rest of the home
        does not."""
        venv = ws / ".venv" / "bin"
        venv.mkdir(parents=True)
        (venv / "greet").symlink_to(home / ".local" / "tool" / "bin" / "greet")
        out = call({"argv": [str(venv / "greet")]})
        assert out["stdout"] == "hello from the toolchain\n", out["stderr"]
        out = call(shell(f"cat {home}/.ssh/id_ed25519; echo x > {home}/.local/tool/lib/new"))
        assert "PRIVATE KEY" not in out["stdout"]
        assert not (home / ".local" / "tool" / "lib" / "new").exists()

    def test_a_virtualenv_under_tmp_still_runs(self, call: Call, ws: Path) -> None:
        """The sandbox has a /tmp of its own, so a project cloned under /tmp would lose its
        virtualenv: a program run from a `bin` directory there is kept, read-only, with
        its `lib`; the rest of that directory is not there."""
        clone = Path(tempfile.mkdtemp(dir="/tmp", prefix="mini-harness-clone-"))
        try:
            clone.chmod(0o755)  # for the unprivileged user too
            (clone / "secret.txt").write_text("not for the sandbox\n")
            venv = clone / ".venv"
            (venv / "bin").mkdir(parents=True)
            (venv / "lib").mkdir()
            (venv / "lib" / "greeting").write_text("hello from /tmp\n")
            tool = venv / "bin" / "greet"
            tool.write_text(f"#!/bin/sh\ncat {venv}/lib/greeting\n")
            tool.chmod(0o755)
            out = call({"argv": [str(tool)]})
            assert out["stdout"] == "hello from /tmp\n", out["stderr"]
            out = call(shell(f"cat {clone}/secret.txt; echo x > {venv}/lib/new; true"))
            assert "not for the sandbox" not in out["stdout"]
            assert not (venv / "lib" / "new").exists()
        finally:
            shutil.rmtree(clone)


class TestControls:
    @pytest.mark.parametrize(
        "target",
        [
            ".git/config",
            ".git/hooks/pre-commit",
            ".mini-harness/policy.toml",
            "logs/run.jsonl",
            "logs/run.jsonl.torn-1",
        ],
    )
    def test_controls_are_read_only(self, call: Call, ws: Path, target: str) -> None:
        """The repository's config and hooks, the policy and the open transcript (with its
        sidecars) cannot be written, appended to, replaced or deleted."""
        before = (ws / target).read_bytes() if (ws / target).exists() else None
        out = call(
            shell(
                f"echo x >> {target}; echo x > {target}.new && mv {target}.new {target}; "
                f"rm -f {target}; echo done"
            )
        )
        assert "done" in out["stdout"]
        assert (ws / target).read_bytes() == before if before is not None else True
        assert (ws / target).exists() is (before is not None)

    def test_controls_cannot_be_moved_away(self, call: Call, ws: Path) -> None:
        """`.git` and `.mini-harness` cannot be renamed or removed and put back changed."""
        call(shell("mv .git old-git; rm -rf .mini-harness; mv .mini-harness x; true"))
        assert (ws / ".git" / "config").read_text() == "[core]\n"
        assert (ws / ".mini-harness" / "policy.toml").read_text() == "# the user's rules\n"

    def test_no_write_through_a_link(self, call: Call, ws: Path) -> None:
        """A symlink made in the workspace does not lead a write into `.git`."""
        call(shell("ln -s .git/config cfg; echo '[core] hooksPath = x' >> cfg; true"))
        assert (ws / ".git" / "config").read_text() == "[core]\n"

    def test_a_missing_policy_cannot_be_created(self, call: Call, ws: Path) -> None:
        """Without a .mini-harness, a command cannot create one (with a policy a later run
        would obey), and none is left behind."""
        shutil.rmtree(ws / ".mini-harness")
        out = call(
            shell(
                "mkdir -p .mini-harness; "
                "printf '[[rules]]\\ndecision = \"allow\"\\n' > .mini-harness/policy.toml; "
                "ls -a .mini-harness"
            )
        )
        assert out["exitCode"] != 0 or "policy.toml" not in out["stdout"]
        assert not (ws / ".mini-harness").exists()

    def test_a_missing_repository_cannot_be_created(self, call: Call, ws: Path) -> None:
        """Without a .git, a command cannot create one (with a config or hooks the git
        tools would later find), and none is left behind."""
        shutil.rmtree(ws / ".git")
        out = call(
            shell(
                "git init -q . ; mkdir -p .git/hooks; echo '[core]' > .git/config; "
                "ls -A .git; echo done"
            )
        )
        assert out["stdout"] == "done\n", out["stderr"]
        assert not (ws / ".git").exists()

    @pytest.mark.parametrize(
        ("control", "link"),
        [
            (".git/config", "cfg"),
            (".git/hooks/pre-commit", "node_modules/hook"),
            (".mini-harness/policy.toml", "policy-copy.toml"),
            ("logs/run.jsonl", "notes.txt"),
        ],
    )
    def test_a_control_reached_through_a_hard_link_is_read_only(
        self, call: Call, ws: Path, control: str, link: str
    ) -> None:
        """A file that is a control under another name (a hard link), even in a
        directory the file tools skip, cannot be written through that name."""
        if not (ws / control).exists():
            (ws / control).write_text("#!/bin/sh\n")
        (ws / link).parent.mkdir(exist_ok=True)
        os.link(ws / control, ws / link)
        if os.stat(ws).st_uid == NOBODY:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(ws)], check=True)
        before = (ws / control).read_bytes()
        out = call(shell(f"echo 'planted' >> {link}; truncate -s 0 {link}; echo done"))
        assert "done" in out["stdout"]
        assert (ws / control).read_bytes() == before
        assert (ws / link).read_bytes() == before

    def test_a_nested_repository_is_read_only(self, call: Call, ws: Path) -> None:
        """A `.git` below the root is read-only too."""
        (ws / "sub" / ".git").mkdir(parents=True)
        (ws / "sub" / ".git" / "config").write_text("[core]\n")
        if os.stat(ws).st_uid == NOBODY:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(ws / "sub")], check=True)
        call(shell("echo x >> sub/.git/config; true"))
        assert (ws / "sub" / ".git" / "config").read_text() == "[core]\n"

    def test_a_hard_link_to_the_transcript_is_read_only(self, call: Call, ws: Path) -> None:
        """Another name of the open transcript (a hard link made before the run) cannot be
        written through, replaced or used to make one more name."""
        os.link(ws / "logs" / "run.jsonl", ws / "notes.txt")
        out = call(
            shell(
                "echo forged >> notes.txt; echo x > n.new && mv n.new notes.txt; "
                "ln notes.txt more.txt; echo done"
            )
        )
        assert "done" in out["stdout"]
        assert (ws / "logs" / "run.jsonl").read_text() == "{}\n"
        assert (ws / "notes.txt").read_text() == "{}\n"
        assert not (ws / "more.txt").exists()

    def test_a_transcript_moved_by_a_command_is_not_written(self, ws: Path) -> None:
        """A command that renames the transcript's directory cannot write it under its new
        name, and the next command is refused (its new name is not known)."""
        workspace = Workspace(ws, protected=(ws / "logs" / "run.jsonl",))
        run = RunCommand(workspace, bubblewrap())
        run(shell("mv logs moved; echo forged >> moved/run.jsonl; true"))
        assert (ws / "moved" / "run.jsonl").read_text() == "{}\n"
        with pytest.raises(WorkspaceError, match="is no longer at its path"):
            run(shell("echo forged >> moved/run.jsonl"))
        assert (ws / "moved" / "run.jsonl").read_text() == "{}\n"

    def test_a_symlinked_control_is_refused(self, ws: Path) -> None:
        """A `.mini-harness` that is a link could be replaced: commands are refused."""
        (ws / "real-settings").mkdir()
        shutil.rmtree(ws / ".mini-harness")
        (ws / ".mini-harness").symlink_to("real-settings")
        with pytest.raises(WorkspaceError, match=r"\.mini-harness.* is a symlink"):
            RunCommand(Workspace(ws), bubblewrap())({"argv": ["true"]})


class TestLimits:
    def test_the_default_limits_apply(self, call: Call) -> None:
        """The command runs with the process limit and without core dumps."""
        out = call({"argv": ["cat", "/proc/self/limits"]})
        rows = {line[:26].strip(): line[26:].split() for line in out["stdout"].splitlines()}
        assert rows["Max processes"][:2] == [str(MAX_PROCESSES)] * 2
        assert rows["Max core file size"][:2] == ["0", "0"]
        assert rows["Max data size"][0] != "unlimited"

    def test_memory_is_limited(self, call: Call) -> None:
        """A process that asks for more memory than its limit gets none."""
        limit = 256 << 20
        limits = ResourceLimits(((resource.RLIMIT_DATA, limit, limit),))
        script = "b = bytearray(512 << 20); print('allocated')"
        out = call({"argv": [PYTHON, "-c", script]}, limits=limits)
        assert "MemoryError" in out["stderr"]
        assert "allocated" not in out["stdout"]

    def test_processes_are_limited(self, call: Call, user: str) -> None:
        """A command cannot start more processes than its limit (the kernel does not hold
        root to it, so this is checked for an unprivileged user)."""
        if user != "nobody" and AS_ROOT:
            pytest.skip("the kernel exempts root from the process limit")
        limits = ResourceLimits(((resource.RLIMIT_NPROC, 40, 40),))
        script = "i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done; echo started $i"
        started = time.monotonic()
        out = call(shell(script, timeout=20), limits=limits)
        assert "started 100" not in out["stdout"]
        assert time.monotonic() - started < 15


class TestLifetime:
    def test_no_process_outlives_the_call(self, call: Call, ws: Path) -> None:
        """A process that leaves the command's session is ended with the sandbox."""
        call(shell("setsid sh -c 'sleep 0.5; touch late.txt' & exit 0"))
        time.sleep(1.5)
        assert not (ws / "late.txt").exists()

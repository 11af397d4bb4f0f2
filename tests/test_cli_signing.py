"""Signed heads as a user sees them: `transcript keygen`, `transcript sign`, `transcript
verify --vkey/--allowed-signers/--signed-head` (one file, a corpus, --json), `--sign-with`
on the commands that write a log, and SSH keys through ssh-keygen."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import Result

from mini_harness.transcripts.note import SignerKey
from tests.agent.recorded_runs import invoke
from tests.mcp_client import RawClient

HELLO = '{"text":"hello"}'
INSTALL = 'pip install "mini-harness[sign]"'


def _dispatch(log: Path, *more: str) -> Result:
    return invoke(["--tool", "echo", "--tool-input", HELLO, "--log", str(log), *more])


@pytest.fixture(name="keys")
def _keys(tmp_path: Path) -> Path:
    """A directory with two key pairs: ci (ci.key, ci.vkey) and witness."""
    directory = tmp_path / "keys"
    for name in ("ci", "witness"):
        assert invoke(["transcript", "keygen", name, "-o", str(directory)]).exit_code == 0
    return directory


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    assert _dispatch(path).exit_code == 0
    return path


def _vkey(keys: Path, name: str = "ci") -> str:
    return (keys / f"{name}.vkey").read_text().strip()


def _shown(keys: Path, name: str = "ci") -> str:
    """How a key is named in what verify prints: NAME+ID."""
    return "+".join(_vkey(keys, name).split("+")[:2])


def _id(path: Path) -> str:
    return str(orjson.loads(path.read_bytes().splitlines()[0])["transcriptId"])


class TestKeygen:
    def test_writes_a_key_pair(self, tmp_path: Path) -> None:
        """keygen writes the signer key (mode 0600) and the verifier key, and prints the
        verifier key last; the two belong together."""
        result = invoke(["transcript", "keygen", "example.com/ci", "-o", str(tmp_path / "k")])
        assert result.exit_code == 0, result.output
        secret, public = tmp_path / "k/example.com-ci.key", tmp_path / "k/example.com-ci.vkey"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        key = SignerKey.parse(secret.read_text().strip())
        assert str(key.verifier()) == public.read_text().strip()
        assert result.stdout == (
            f"[mini-harness] Signer key: {secret} (keep it secret: it signs as example.com/ci)\n"
            f"[mini-harness] Verifier key: {public}\n"
            f"{key.verifier()}\n"
        )

    def test_never_overwrites(self, keys: Path) -> None:
        """A key pair already there is kept; keygen exits 2."""
        before = (keys / "ci.key").read_bytes()
        result = invoke(["transcript", "keygen", "ci", "-o", str(keys)])
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: {keys}/ci.key exists: not overwritten (choose another -o "
            "DIR or NAME)\n"
        )
        assert (keys / "ci.key").read_bytes() == before

    def test_a_bad_name_is_a_usage_error(self, tmp_path: Path) -> None:
        """A name with a space or a plus sign is refused before anything is written."""
        result = invoke(["transcript", "keygen", "my key", "-o", str(tmp_path / "k")])
        assert result.exit_code == 2
        assert "is not a key name" in result.stderr
        assert not (tmp_path / "k").exists()


class TestSignAndVerify:
    def test_round_trip(self, log: Path, keys: Path) -> None:
        """sign writes PATH.sig; verify --vkey checks PATH against it and says so."""
        signed = invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        assert signed.exit_code == 0, signed.output
        note = Path(f"{log}.sig")
        sha256 = note.read_text().splitlines()[2].removeprefix("sha256 ")
        assert signed.stdout == (
            f"[mini-harness] Signed the head of {log} (seq 3, sha256 {sha256}) by "
            f"{_shown(keys)}: {note}\n"
        )
        result = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
        assert result.exit_code == 0, result.output
        time = note.read_text().splitlines()[3].removeprefix("time ")
        lines = result.stdout.splitlines()
        assert lines[-3:] == [
            f"[mini-harness] Signed head: {note}: seq 3, sha256 {sha256}, signed {time} by "
            f"{_shown(keys)}",
            "[mini-harness] Signed head reached at line 4, the last line",
            "[mini-harness] Verified: no problems found.",
        ]

    def test_json(self, log: Path, keys: Path) -> None:
        """--json carries the signed head: its claim, who signed it, whether it is reached."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        result = invoke(
            ["transcript", "verify", str(log), "--vkey", str(keys / "ci.vkey"), "--json"]
        )
        assert result.exit_code == 0, result.output
        report = orjson.loads(result.stdout)
        signed = report["signedHead"]
        assert report["ok"]
        assert signed["transcriptId"] == _id(log)
        assert (signed["seq"], signed["sha256"], signed["reached"], signed["line"]) == (
            3,
            report["headSha256"],
            True,
            4,
        )
        assert signed["signedBy"] == [_shown(keys)]

    def test_a_witness_cosigns(self, log: Path, keys: Path) -> None:
        """A second key signing the same head adds its signature; each key alone proves it."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        result = invoke(["transcript", "sign", str(log), "--key", str(keys / "witness.key")])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"[mini-harness] Co-signed the head of {log}")
        assert result.stdout.endswith(f"[mini-harness] {log}.sig holds 2 signatures\n")
        for name in ("ci", "witness"):
            assert (
                invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys, name)]).exit_code
                == 0
            )

    def test_tampering_exits_1_saying_what_differs(self, log: Path, keys: Path) -> None:
        """A line appended after signing: exit 1, and the problem says so."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        assert _dispatch(log).exit_code == 0
        result = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
        assert result.exit_code == 1
        assert (
            "[mini-harness] Problem: 3 lines after the signed head (line 4, seq 3) are covered "
            "by no signature: written after it was signed\n"
        ) in result.stdout
        assert result.stderr == f"[mini-harness] Error: 1 problem found in {log}\n"

    def test_a_wrong_key_exits_1(self, log: Path, keys: Path) -> None:
        """A note checked with a key that did not sign it is refused: exit 1."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        result = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys, "witness")])
        assert result.exit_code == 1
        assert f"Problem: no signature in {log}.sig is by a trusted key" in result.stdout

    def test_an_edited_note_exits_1(self, log: Path, keys: Path) -> None:
        """A note whose text was changed after signing is refused: exit 1."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        note = Path(f"{log}.sig")
        note.write_text(note.read_text().replace("seq 3", "seq 2"))
        result = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
        assert result.exit_code == 1
        assert "does not verify: the note was changed after it was signed" in result.stdout

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--vkey", "{keys}/ci.vkey"], "cannot read signed head {log}.sig: No such file"),
            (["--vkey", "ci+00000000+AAAA"], "--vkey ci+00000000+AAAA: not an Ed25519 key"),
            (["--vkey", "{keys}/nothing"], "--vkey {keys}/nothing: no such file, and not a"),
            (["--signed-head", "{log}"], "--signed-head needs --vkey VKEY or --allowed-signers"),
            (["--vkey", "{keys}/ci.vkey", "--signed-head", "{log}"], "is not a signed note"),
        ],
        ids=["no note", "bad key", "no key file", "no key", "not a note"],
    )
    def test_bad_input_exits_2(self, log: Path, keys: Path, args: list[str], message: str) -> None:
        """A note or key that cannot be read, or a note without a key, is a usage error."""
        args = [a.format(keys=keys, log=log) for a in args]
        result = invoke(["transcript", "verify", str(log), *args])
        assert result.exit_code == 2, result.output
        assert message.format(keys=keys, log=log) in result.stderr

    def test_sign_refuses_a_file_that_does_not_verify(self, log: Path, keys: Path) -> None:
        """A file with a broken chain is not signed: exit 1, no note."""
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join([*lines[:2], lines[2].replace(b"hello", b"HELLO"), *lines[3:]]))
        result = invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        assert result.exit_code == 1
        assert f"cannot sign {log}: it does not verify (line 4 (seq 3, byte" in result.stderr
        assert not Path(f"{log}.sig").exists()

    def test_sign_needs_a_key(self, log: Path) -> None:
        """sign without --key or --ssh is a usage error."""
        result = invoke(["transcript", "sign", str(log)])
        assert result.exit_code == 2
        assert "sign needs a key: --key SIGNER" in result.stderr


class TestCorpus:
    def test_each_file_against_its_note(self, tmp_path: Path, keys: Path) -> None:
        """verify DIR --vkey checks every file against PATH.sig beside it; the report says
        who signed each and what differs; the worst file decides the exit code."""
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        for name in ("a", "b", "c"):
            _dispatch(corpus / f"{name}.jsonl")
            invoke(
                ["transcript", "sign", str(corpus / f"{name}.jsonl"), "--key", str(keys / "ci.key")]
            )
        _dispatch(corpus / "c.jsonl")  # c grew after it was signed
        signer = _shown(keys)
        result = invoke(
            ["transcript", "verify", str(corpus), "--vkey", _vkey(keys), "--workers", "1"]
        )
        assert result.exit_code == 1, result.output
        assert result.stdout.startswith(
            "[mini-harness] Verifying 3 transcripts (chain, protocol, in-doubt calls and "
            "signed heads)\n"
        )
        rows = result.stdout.splitlines()[1:5]
        assert rows[0].startswith(f"ok          {corpus}/a.jsonl  1 run, 1 call, 0 problems; head ")
        assert rows[0].endswith(f"; signed by {signer}")
        assert rows[2].startswith(f"problems    {corpus}/c.jsonl  2 runs, 2 calls, 1 problem")
        assert rows[3] == (
            "    3 lines after the signed head (line 4, seq 3) are covered by no signature: "
            "written after it was signed"
        )
        as_json = invoke(["transcript", "verify", str(corpus), "--vkey", _vkey(keys), "--json"])
        files = orjson.loads(as_json.stdout)["files"]
        assert [f["signedBy"] for f in files] == [[signer]] * 3

    def test_a_file_without_a_note_cannot_be_verified(self, tmp_path: Path, keys: Path) -> None:
        """A file of the corpus without its note is unreadable as a signed file (exit 2)."""
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        _dispatch(corpus / "a.jsonl")
        result = invoke(["transcript", "verify", str(corpus), "--vkey", _vkey(keys)])
        assert result.exit_code == 2
        assert f"cannot read signed head {corpus}/a.jsonl.sig" in result.stdout

    def test_signed_head_is_for_one_file(self, tmp_path: Path, keys: Path) -> None:
        """--signed-head names one note: with a corpus it is a usage error."""
        result = invoke(
            ["transcript", "verify", str(tmp_path), "--vkey", _vkey(keys), "--signed-head", "x"]
        )
        assert result.exit_code == 2
        assert "--signed-head applies to one transcript, not to a corpus" in result.stderr


class TestSignWith:
    def test_a_dispatch_signs_its_head(self, tmp_path: Path, keys: Path) -> None:
        """--sign-with signs the head once the command ends; its line is the last one."""
        log = tmp_path / "t.jsonl"
        result = _dispatch(log, "--sign-with", str(keys / "ci.key"))
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1].startswith(f"[mini-harness] Signed the head of {log}")
        verified = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
        assert verified.exit_code == 0, verified.output

    def test_run_resume_and_fork_sign_their_heads(self, tmp_path: Path, keys: Path) -> None:
        """run, resume and fork each sign the head they leave; each note replaces the
        earlier one, and the file verifies against the last."""
        log = tmp_path / "t.jsonl"
        sign = ["--sign-with", str(keys / "ci.key")]
        for args in (
            ["run", "hello", "--log", str(log), *sign],
            ["resume", str(log), "more", *sign],
            ["fork", str(log), "--at-step", "1", *sign],
        ):
            result = invoke(args)
            assert result.exit_code == 0, result.output
            assert result.stdout.splitlines()[-1].startswith("[mini-harness] Signed the head")
            verified = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
            assert verified.exit_code == 0, verified.output

    def test_with_json_the_line_goes_to_stderr(self, tmp_path: Path, keys: Path) -> None:
        """With --json, standard output stays one JSON document."""
        log = tmp_path / "t.jsonl"
        result = invoke(
            ["run", "hello", "--log", str(log), "--json", "--sign-with", str(keys / "ci.key")]
        )
        assert result.exit_code == 0, result.output
        assert orjson.loads(result.stdout)["stopReason"] == "final"
        assert result.stderr.startswith(f"[mini-harness] Signed the head of {log}")

    def test_a_run_in_the_session_store_is_signed(
        self, tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without --log a run is recorded in the session store: that transcript is signed."""
        monkeypatch.chdir(tmp_path)
        result = invoke(["run", "hello", "--sign-with", str(keys / "ci.key")])
        assert result.exit_code == 0, result.output
        notes = list(Path(os.environ["MINI_HARNESS_HOME"]).rglob("*.jsonl.sig"))
        assert len(notes) == 1
        assert f"Signed the head of {notes[0].with_suffix('')}" in result.stdout

    def test_needs_a_log(self, tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With --no-log nothing is recorded, so nothing can be signed: exit 2, no run (the
        same for a dispatch without --log)."""
        monkeypatch.chdir(tmp_path)
        result = invoke(["run", "hello", "--no-log", "--sign-with", str(keys / "ci.key")])
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --sign-with cannot be combined with --no-log: "
            "nothing is signed\n"
        )
        assert result.stdout == ""
        echo = ["--tool", "echo", "--tool-input", '{"text": "x"}']
        result = invoke([*echo, "--sign-with", str(keys / "ci.key")])
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: --sign-with needs --log PATH")

    def test_a_bad_key_stops_before_anything_runs(self, tmp_path: Path, keys: Path) -> None:
        """A verifier key given as the signer: exit 2 and no transcript written."""
        log = tmp_path / "t.jsonl"
        result = invoke(["run", "hello", "--log", str(log), "--sign-with", str(keys / "ci.vkey")])
        assert result.exit_code == 2
        assert "not a signer key" in result.stderr
        assert not log.exists()

    def test_a_head_that_cannot_be_signed_fails_the_command(
        self, tmp_path: Path, keys: Path
    ) -> None:
        """A note there that the file does not reach is kept, and the run, which succeeded,
        exits 1 saying why."""
        log = tmp_path / "t.jsonl"
        other = tmp_path / "other.jsonl"
        _dispatch(other, "--sign-with", str(keys / "ci.key"))
        shutil.copy(f"{other}.sig", f"{log}.sig")
        kept = Path(f"{log}.sig").read_bytes()
        result = _dispatch(log, "--sign-with", str(keys / "ci.key"))
        assert result.exit_code == 1
        assert result.stderr.startswith(
            f"[mini-harness] Error: --sign-with: {log}.sig is not overwritten: it signs a head "
        )
        assert Path(f"{log}.sig").read_bytes() == kept

    def test_mcp_signs_when_the_session_ends(self, tmp_path: Path, keys: Path) -> None:
        """The MCP server signs its log's head when the session ends, on stderr."""
        log = tmp_path / "t.jsonl"
        client = RawClient(["--log", str(log), "--sign-with", str(keys / "ci.key")], tmp_path)
        client.handshake()
        client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        code, stderr = client.finish()
        assert code == 0, stderr
        assert stderr.splitlines()[-1].startswith(f"[mini-harness] Signed the head of {log}")
        verified = invoke(["transcript", "verify", str(log), "--vkey", _vkey(keys)])
        assert verified.exit_code == 0, verified.output


class TestWithoutCryptography:
    @pytest.mark.parametrize(
        "command",
        [
            ["transcript", "keygen", "ci", "-o", "{dir}/new"],
            ["transcript", "sign", "{log}", "--key", "{keys}/ci.key"],
            ["transcript", "verify", "{log}", "--vkey", "{keys}/ci.vkey"],
            [
                "--tool",
                "echo",
                "--tool-input",
                "{hello}",
                "--log",
                "{log}",
                "--sign-with",
                "{keys}/ci.key",
            ],
        ],
        ids=["keygen", "sign", "verify", "sign-with"],
    )
    def test_exit_2_with_the_install_line(
        self, tmp_path: Path, log: Path, keys: Path, command: list[str]
    ) -> None:
        """Without the cryptography package, every command that needs it exits 2 and says
        how to install it."""
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        args = [a.format(dir=tmp_path, log=log, keys=keys, hello=HELLO) for a in command]
        code = (
            "import sys; sys.modules['cryptography'] = None\n"
            "from mini_harness.cli import cli\n"
            f"cli({args!r}, prog_name='mini-harness')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            f"[mini-harness] Error: Ed25519 signatures need the cryptography package: {INSTALL}\n"
        )


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        pytest.skip(
            "ssh-keygen is missing (apt-get install openssh-client; `make test` installs it)"
        )
    return found


@pytest.fixture(name="ssh")
def _ssh(tmp_path: Path) -> tuple[Path, Path]:
    """An unencrypted SSH key and an allowed-signers file listing it for alice."""
    keygen = _ssh_keygen()
    key = tmp_path / "id_ed25519"
    subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    public = " ".join(Path(f"{key}.pub").read_text().split()[:2])
    allowed.write_text(f"alice@example.com {public}\n")
    return key, allowed


class TestSsh:
    def test_round_trip(self, log: Path, ssh: tuple[Path, Path]) -> None:
        """sign --ssh KEY; verify --allowed-signers FILE names the principal."""
        key, allowed = ssh
        result = invoke(["transcript", "sign", str(log), "--ssh", str(key)])
        assert result.exit_code == 0, result.output
        assert Path(f"{log}.sig").read_text().splitlines()[-1].startswith("\u2014 ssh ")
        verified = invoke(["transcript", "verify", str(log), "--allowed-signers", str(allowed)])
        assert verified.exit_code == 0, verified.output
        assert "by alice@example.com (ssh)\n" in verified.stdout

    def test_beside_an_ed25519_signature(
        self, log: Path, keys: Path, ssh: tuple[Path, Path]
    ) -> None:
        """An SSH signature co-signs a note; a reader that trusts only the Ed25519 key
        ignores it, and one that trusts only the SSH key ignores the other."""
        key, allowed = ssh
        invoke(["transcript", "sign", str(log), "--key", str(keys / "ci.key")])
        assert invoke(["transcript", "sign", str(log), "--ssh", str(key)]).exit_code == 0
        for trust in (["--vkey", _vkey(keys)], ["--allowed-signers", str(allowed)]):
            verified = invoke(["transcript", "verify", str(log), *trust])
            assert verified.exit_code == 0, verified.output

    def test_a_key_not_allowed_is_not_trusted(
        self, log: Path, tmp_path: Path, ssh: tuple[Path, Path]
    ) -> None:
        """An SSH signature by a key the allowed-signers file does not list is ignored, so
        the note is refused."""
        key, _ = ssh
        invoke(["transcript", "sign", str(log), "--ssh", str(key)])
        empty = tmp_path / "nobody"
        empty.write_text("")
        verified = invoke(["transcript", "verify", str(log), "--allowed-signers", str(empty)])
        assert verified.exit_code == 1
        assert "is by a trusted key (it is signed by ssh+" in verified.stdout

    def test_an_edited_note_is_refused(self, log: Path, ssh: tuple[Path, Path]) -> None:
        """The SSH signature no longer verifies once the note's text changed."""
        key, allowed = ssh
        invoke(["transcript", "sign", str(log), "--ssh", str(key)])
        note = Path(f"{log}.sig")
        note.write_text(note.read_text().replace("seq 3", "seq 2"))
        verified = invoke(["transcript", "verify", str(log), "--allowed-signers", str(allowed)])
        assert verified.exit_code == 1
        assert "alice@example.com (ssh) in" in verified.stdout
        assert "does not verify: the note was changed after it was signed" in verified.stdout

    def test_a_key_restricted_to_other_namespaces(self, log: Path, ssh: tuple[Path, Path]) -> None:
        """An allowed-signers line that limits the key to git signatures: refused with
        ssh-keygen's reason, not taken for an edited note."""
        key, allowed = ssh
        invoke(["transcript", "sign", str(log), "--ssh", str(key)])
        allowed.write_text(allowed.read_text().replace(" ssh-", ' namespaces="git" ssh-', 1))
        verified = invoke(["transcript", "verify", str(log), "--allowed-signers", str(allowed)])
        assert verified.exit_code == 1
        assert 'not permitted for use in signature namespace "mini-harness.transcript"' in (
            verified.stdout
        )

    def test_without_ssh_keygen(
        self, log: Path, ssh: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No ssh-keygen on PATH: exit 2 with the install line."""
        key, _ = ssh
        monkeypatch.setenv("PATH", str(log.parent))
        result = invoke(["transcript", "sign", str(log), "--ssh", str(key)])
        assert result.exit_code == 2
        assert "apt-get install openssh-client" in result.stderr

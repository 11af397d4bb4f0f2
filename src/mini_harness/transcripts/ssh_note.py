"""Signature lines made and checked by OpenSSH's `ssh-keygen -Y`, for people who would
rather sign with the SSH key they have than make a new one.

The line is an ordinary signed-note line named `ssh`: its signature is the SSHSIG blob
`ssh-keygen -Y sign -n mini-harness.transcript` makes of the note's text (the public key
is inside it), and its key id is the first four bytes of SHA-256(`ssh`, newline, 0xff,
`SSHSIG`, the public key blob): 0xff is the signed-note type byte for signatures the
C2SP specification does not assign. Readers that do not know it ignore it, as they
ignore every key they do not trust. It is checked against an allowed-signers file
(`ssh-keygen -Y find-principals`, then `-Y verify`), so a key counts when that file
lists it for a principal.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import attrs

from mini_harness.errors import NoteFormatError, SignatureRefusedError, SigningUnavailableError
from mini_harness.transcripts.note import NoteSignature, Verifier, key_id

SSH_NAME = "ssh"
"""The key name of every SSH signature line (the key itself is in the signature)."""
NAMESPACE = "mini-harness.transcript"
"""The `-n` namespace of the signatures (an allowed-signers line may restrict it)."""
SSH_TYPE = b"\xffSSHSIG"
MAGIC = b"SSHSIG"
_ARMOR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")
_TIMEOUT = 60.0


def ssh_keygen() -> str:
    """The path of ssh-keygen, or SigningUnavailableError with the install line."""
    found = shutil.which("ssh-keygen")
    if found is None:
        raise SigningUnavailableError(
            "SSH signatures need ssh-keygen from OpenSSH (apt-get install openssh-client)"
        )
    return found


def _strings(blob: bytes, count: int) -> list[bytes]:
    """The first `count` SSH wire strings (uint32 length, bytes) of `blob`."""
    out: list[bytes] = []
    offset = 0
    for _ in range(count):
        size = int.from_bytes(blob[offset : offset + 4], "big")
        if offset + 4 + size > len(blob):
            raise ValueError("a string runs past the end")
        out.append(blob[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return out


def public_key(blob: bytes) -> bytes | None:
    """The public key blob inside an SSHSIG signature, or None if `blob` is not one."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 4:
        return None
    try:
        (key,) = _strings(blob[len(MAGIC) + 4 :], 1)
    except ValueError:
        return None
    return key


def _armored(blob: bytes) -> str:
    text = base64.b64encode(blob).decode("ascii")
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return "\n".join([_ARMOR[0], *lines, _ARMOR[1]]) + "\n"


def _dearmored(text: str) -> bytes:
    body = text.strip().splitlines()
    if len(body) < 3 or body[0] != _ARMOR[0] or body[-1] != _ARMOR[1]:
        raise ValueError("not an armored SSH signature")
    return base64.b64decode("".join(body[1:-1]), validate=True)


def _run(args: list[str], text: bytes) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(  # noqa: S603 - ssh-keygen, found on PATH, with our arguments
            [ssh_keygen(), *args], input=text, capture_output=True, timeout=_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise SigningUnavailableError(
            f"ssh-keygen -Y {args[1]} did not finish in {_TIMEOUT:.0f} s"
        ) from None
    except OSError as exc:
        raise SigningUnavailableError(f"cannot run ssh-keygen: {exc.strerror or exc}") from None


@attrs.frozen
class SshSigner:
    """Signs a note's text with an SSH private key file (`ssh-keygen -Y sign -f KEY`)."""

    key_path: str

    def signature(self, text: bytes) -> NoteSignature:
        done = _run(["-Y", "sign", "-f", self.key_path, "-n", NAMESPACE], text)
        stderr = done.stderr.decode("utf-8", "replace").strip()
        if done.returncode != 0:
            why = stderr.splitlines()[-1] if stderr else f"exit status {done.returncode}"
            raise NoteFormatError(f"ssh-keygen cannot sign with {self.key_path}: {why}")
        try:
            blob = _dearmored(done.stdout.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            raise NoteFormatError(
                f"ssh-keygen -Y sign gave no SSH signature for {self.key_path}"
            ) from None
        key = public_key(blob)
        if key is None:
            raise NoteFormatError(f"ssh-keygen -Y sign gave no SSH signature for {self.key_path}")
        return NoteSignature.made(SSH_NAME, key_id(SSH_NAME, SSH_TYPE + key), blob)


@attrs.frozen
class SshVerifier:
    """An SSH key that an allowed-signers file lists for `principals`."""

    allowed_signers: str
    principals: tuple[str, ...]

    @property
    def shown(self) -> str:
        return f"{self.principals[0]} (ssh)"

    def verify(self, text: bytes, signature: bytes) -> bool:
        """Whether the signature verifies for one of the principals. ssh-keygen refusing
        for another reason than a wrong signature (the allowed-signers line restricts the
        key to other namespaces, or to another time) is said as that reason."""
        reasons: list[str] = []
        with _signature_file(signature) as path:
            for principal in self.principals:
                args = ["-Y", "verify", "-f", self.allowed_signers, "-I", principal]
                done = _run([*args, "-n", NAMESPACE, "-s", path], text)
                if done.returncode == 0:
                    return True
                said = done.stderr.decode("utf-8", "replace").strip().splitlines()
                reasons += [line for line in said if line != "Could not verify signature."]
        if any("incorrect signature" in reason for reason in reasons) or not reasons:
            return False
        raise SignatureRefusedError(
            f"ssh-keygen does not accept the SSH signature of {self.principals[0]}: {reasons[-1]}"
        )


@contextlib.contextmanager
def _signature_file(blob: bytes) -> Iterator[str]:
    """The armored signature in a private temporary file, removed on the way out."""
    handle, path = tempfile.mkstemp(prefix="mini-harness-", suffix=".sig")
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write(_armored(blob))
        yield path
    finally:
        os.unlink(path)


def ssh_verifier(allowed_signers: str, signature: NoteSignature) -> Verifier | None:
    """The trusted key of an SSH signature line: None unless the line is one (named `ssh`,
    an SSHSIG blob whose key has the line's id) and the allowed-signers file lists its key
    for some principal."""
    if signature.name != SSH_NAME:
        return None
    blob = signature.signature
    key = public_key(blob)
    if key is None or key_id(SSH_NAME, SSH_TYPE + key) != signature.key_id:
        return None
    with _signature_file(blob) as path:
        found = _run(["-Y", "find-principals", "-s", path, "-f", allowed_signers], b"")
    if found.returncode != 0:
        return None
    principals = tuple(p for p in found.stdout.decode("utf-8", "replace").splitlines() if p)
    return SshVerifier(allowed_signers, principals) if principals else None

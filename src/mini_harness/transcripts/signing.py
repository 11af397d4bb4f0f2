"""Signed heads: sign the last line of a transcript in a detached note, and verify a
transcript against its note.

A signed head says "this key saw this transcript end with this line". The note is kept
beside the transcript (PATH.sig by default) or anywhere else; verify checks its signature
with keys the reader trusts (the `--vkey` verifier keys, and an SSH allowed-signers file),
then that the file still ends with exactly that line, the chain reaching it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from mini_harness.errors import (
    MiniHarnessError,
    NoteFormatError,
    SignatureRefusedError,
    TranscriptError,
)
from mini_harness.transcripts.head_note import HeadClaim, SignedHead, utc_now
from mini_harness.transcripts.note import (
    Note,
    NoteSignature,
    Signer,
    SignerKey,
    Verifier,
    VerifierKey,
    ed25519_keys,
    require_cryptography,
)
from mini_harness.transcripts.verify import VerifyReport, verify_transcript

NOTE_SUFFIX = ".sig"
"""A transcript's note is, unless told otherwise, beside it: PATH.sig."""
MAX_NOTE_BYTES = 1 << 20
"""A note is small (a few hundred bytes per signature): a larger file is not one."""


def note_path_for(path: str) -> str:
    """Where the note of transcript `path` is kept unless told otherwise."""
    return path + NOTE_SUFFIX


@attrs.frozen
class TrustedKeys:
    """The keys a reader trusts: Ed25519 verifier keys, and an SSH allowed-signers file.
    Picklable, so a corpus's workers get it."""

    vkeys: tuple[VerifierKey, ...] = ()
    allowed_signers: str | None = None

    def __call__(self, signature: NoteSignature) -> Verifier | None:
        found = ed25519_keys(self.vkeys)(signature)
        if found is None and self.allowed_signers is not None:
            from mini_harness.transcripts.ssh_note import ssh_verifier

            found = ssh_verifier(self.allowed_signers, signature)
        return found


def read_verifier_keys(values: Iterable[str]) -> tuple[VerifierKey, ...]:
    """Verifier keys from `--vkey` values: each a key (NAME+ID+KEY) or a file of keys,
    one a line (blank lines and lines starting with # are skipped). Two different keys with
    one name and id are refused: a signature could not say which one made it."""
    keys: list[VerifierKey] = []
    for value in values:
        if os.path.isfile(value):
            text = _read_text(value, "verifier key file")
            lines = [line.strip() for line in text.splitlines()]
            found = [
                VerifierKey.parse(line, f"{value} line {number}")
                for number, line in enumerate(lines, 1)
                if line and not line.startswith("#")
            ]
            if not found:
                raise NoteFormatError(f"{value} holds no verifier key")
            keys += found
        elif "+" in value:
            keys.append(VerifierKey.parse(value, f"--vkey {value}"))
        else:
            raise NoteFormatError(f"--vkey {value}: no such file, and not a verifier key")
    unique = tuple(dict.fromkeys(keys))
    named: dict[tuple[str, int], VerifierKey] = {}
    for key in unique:
        if named.setdefault((key.name, key.key_id), key) != key:
            raise NoteFormatError(f"two different verifier keys are named {key.shown}")
    return unique


def read_signer_key(path: str) -> SignerKey:
    """The signer key in file `path` (as `transcript keygen` writes it)."""
    require_cryptography()
    return SignerKey.parse(_read_text(path, "signer key file").strip(), path)


def _read_small(path: str, what: str) -> bytes:
    """The bytes of file `path`, a `what` (a few hundred bytes): NoteFormatError if it
    cannot be read or is larger than any such file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTE_BYTES + 1)
    except OSError as exc:
        raise NoteFormatError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_NOTE_BYTES:
        raise NoteFormatError(f"{path} is not a {what}: larger than {MAX_NOTE_BYTES} bytes")
    return data


def _read_text(path: str, what: str) -> str:
    try:
        return _read_small(path, what).decode("utf-8")
    except UnicodeDecodeError:
        raise NoteFormatError(f"{path} is not a {what}: not UTF-8 text") from None


def read_note(path: str) -> Note:
    """The signed note in file `path`; NoteFormatError if it cannot be read as one."""
    return Note.parse(_read_small(path, "signed head"), path)


def open_signed_head(note_path: str, trusted: TrustedKeys) -> SignedHead:
    """The signed head in `note_path`, its signature checked with `trusted` keys: a
    refused note is a SignedHead that says why (verify reports it as a problem). A note
    that cannot be read, or whose signed text is not a signed head, raises NoteFormatError."""
    note = read_note(note_path)
    try:
        signers = note.open(trusted, note_path)
    except SignatureRefusedError as exc:
        return SignedHead(note_path, refused=exc.message)
    return SignedHead(note_path, HeadClaim.parse(note.text, note_path), signers)


def verify_signed(path: str, note_path: str, trusted: TrustedKeys) -> VerifyReport:
    """Verify transcript `path` and check that it ends with the head signed in
    `note_path` by a `trusted` key."""
    return verify_transcript(path, signed=open_signed_head(note_path, trusted))


CREATED = "created"
COSIGNED = "cosigned"
REPLACED = "replaced"


@attrs.frozen
class SignOutcome:
    """A head signed: the claim, the note it is in, and whether that note was `created`,
    `cosigned` (the same head, signatures added) or `replaced` (it signed an earlier head
    of this transcript, `replaced_seq`)."""

    claim: HeadClaim
    note: str
    signers: tuple[str, ...]
    action: str
    replaced_seq: int | None = None


def sign_transcript(
    path: str,
    signers: Sequence[Signer],
    note_path: str | None = None,
    *,
    time: str | None = None,
) -> SignOutcome:
    """Sign the last line of transcript `path` into `note_path` (default PATH.sig).

    The transcript must verify (a damaged file, a broken chain or a torn tail is refused:
    SignatureRefusedError). A note already there for this same head gets the new
    signatures beside its own (a witness co-signs); one for an earlier head of this
    transcript, which the file still reaches, is replaced; any other note is left alone
    and signing is refused, since it may be the evidence of a rewritten history.
    """
    target = note_path or note_path_for(path)
    existing = _existing_note(target)
    old = None if existing is None else _claim_of(existing, target)
    # The note there is only compared with the file (is its head one the file reaches?),
    # never trusted: its signatures are not checked.
    report = verify_transcript(path, signed=None if old is None else SignedHead(target, old))
    damage = report.damage()
    if report.torn_tail is not None:
        damage.append(report.torn_tail.describe())
    if damage or report.last_seq is None or report.head_sha256 is None:
        why = "; ".join(damage) if damage else "it has no line"
        raise SignatureRefusedError(f"cannot sign {report.path}: it does not verify ({why})")
    if report.transcript_id is None:
        raise TranscriptError(path, f"cannot sign {report.path}: it has no transcript id")
    claim = HeadClaim(report.transcript_id, report.last_seq, report.head_sha256, time or utc_now())
    if existing is None or old is None:
        return _write(target, Note(claim.text()), signers, claim, CREATED)
    if old.transcript_id == claim.transcript_id and (old.seq, old.sha256) == (
        claim.seq,
        claim.sha256,
    ):
        return _write(target, existing, signers, old, COSIGNED)
    if report.signed_head_reached:
        return _write(target, Note(claim.text()), signers, claim, REPLACED, old.seq)
    problem = report.signed_head_problems()[0]
    raise SignatureRefusedError(
        f"{target} is not overwritten: it signs a head {report.path} does not reach "
        f"({problem}); keep it as evidence, or move it away to sign the file as it is now"
    )


def _existing_note(path: str) -> Note | None:
    if not os.path.lexists(path):
        return None
    try:
        return read_note(path)
    except NoteFormatError as exc:
        raise NoteFormatError(f"{exc.message}: not overwritten") from None


def _claim_of(note: Note, path: str) -> HeadClaim:
    try:
        return HeadClaim.parse(note.text, path)
    except MiniHarnessError as exc:
        raise NoteFormatError(f"{exc.message}: not overwritten") from None


def _write(  # noqa: PLR0917 - the parts of one outcome
    target: str,
    note: Note,
    signers: Sequence[Signer],
    claim: HeadClaim,
    action: str,
    replaced_seq: int | None = None,
) -> SignOutcome:
    signed = note.signed(signers)
    new = signed.signatures[len(signed.signatures) - len(signers) :]
    _write_atomically(target, signed.to_bytes())
    return SignOutcome(claim, target, tuple(s.shown for s in new), action, replaced_seq)


def _write_atomically(path: str, data: bytes) -> None:
    """Write `path` whole or not at all: a temporary file beside it, synced, renamed."""
    import tempfile  # only a command that signs writes a note

    directory = os.path.dirname(path) or "."
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".", suffix=".sig-new")
    except OSError as exc:
        raise NoteFormatError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise NoteFormatError(f"cannot write {path}: {exc.strerror or exc}") from None

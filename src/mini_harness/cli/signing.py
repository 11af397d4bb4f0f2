"""`transcript keygen` and `transcript sign`, and what `transcript verify` and
`--sign-with` take from here: the keys named by options, and how a signed head is told."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

import click

from mini_harness.cli.log_options import signer_option
from mini_harness.cli.options import SingleOption
from mini_harness.cli.output import info
from mini_harness.errors import MiniHarnessError, UsageError, counted
from mini_harness.transcripts.note import Signer, SignerKey
from mini_harness.transcripts.signing import (
    COSIGNED,
    REPLACED,
    SignOutcome,
    TrustedKeys,
    read_note,
    read_signer_key,
    read_verifier_keys,
    sign_transcript,
)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def trusted_keys(vkeys: Sequence[str], allowed_signers: str | None) -> TrustedKeys | None:
    """The keys `--vkey` and `--allowed-signers` name; None when neither was given."""
    if not vkeys and allowed_signers is None:
        return None
    if allowed_signers is not None:
        from mini_harness.transcripts.ssh_note import ssh_keygen

        ssh_keygen()  # no ssh-keygen: one error with the install line, before any file
    return TrustedKeys(read_verifier_keys(vkeys), allowed_signers)


def signer_keys(paths: Sequence[str]) -> list[SignerKey]:
    """The signer keys in the files `paths` (read before anything is done with them)."""
    return [read_signer_key(path) for path in paths]


def told(outcome: SignOutcome, path: str) -> str:
    """One line saying what was signed, by whom, and what became of the note."""
    claim = outcome.claim
    by = ", ".join(outcome.signers)
    head = f"seq {claim.seq}, sha256 {claim.sha256}"
    if outcome.action == COSIGNED:
        return f"Co-signed the head of {path} ({head}) in {outcome.note} by {by}"
    replaced = (
        f" (it signed the earlier head at seq {outcome.replaced_seq})"
        if outcome.action == REPLACED
        else ""
    )
    return f"Signed the head of {path} ({head}) by {by}: {outcome.note}{replaced}"


def sign_log_head(path: str, signers: Sequence[Signer], say: Callable[[str], None]) -> int | None:
    """`--sign-with`: sign the head of the log a command wrote, when it ends; the exit code
    of a failure (said as an error), None when signed. What was signed is said as the
    command's last line (when its click context closes), after what it printed of its
    run, which comes after the log is closed."""
    from mini_harness.cli.output import error

    try:
        outcome = sign_transcript(path, signers)
    except MiniHarnessError as exc:
        error(f"--sign-with: {exc.message}")
        return exc.exit_code
    message = told(outcome, path)
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        say(message)
    else:
        ctx.call_on_close(lambda: say(message))
    return None


@click.command("keygen", short_help="Make a key pair that signs transcript heads.")
@click.argument("name")
@click.option(
    "-o",
    "--output",
    "directory",
    cls=SingleOption,
    metavar="DIR",
    default=".",
    type=click.Path(file_okay=False),
    help="Write the two key files in DIR (created if missing; default: here).",
)
def keygen_command(name: str, directory: str) -> None:
    """Make an Ed25519 key pair named NAME (e.g. example.com/ci), in the C2SP signed-note
    formats Go's sumdb/note reads: DIR/NAME.key, the signer key (keep it secret: mode
    0600), and DIR/NAME.vkey, the verifier key to give whoever checks the signatures,
    printed last. Characters of NAME other than letters, digits, '.', '_' and '-' are '-'
    in the file names. Existing files are never overwritten."""
    key = SignerKey.generate(name)
    stem = _UNSAFE.sub("-", name).lstrip(".") or "key"
    os.makedirs(directory, exist_ok=True)
    secret = os.path.join(directory, f"{stem}.key")
    public = os.path.join(directory, f"{stem}.vkey")
    for path in (secret, public):
        if os.path.lexists(path):
            raise UsageError(f"{path} exists: not overwritten (choose another -o DIR or NAME)")
    verifier = str(key.verifier())
    _create(secret, f"{key}\n", 0o600)
    _create(public, f"{verifier}\n", 0o644)
    info(f"Signer key: {secret} (keep it secret: it signs as {name})")
    info(f"Verifier key: {public}")
    click.echo(verifier)


def _create(path: str, text: str, mode: int) -> None:
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError as exc:
        raise UsageError(f"cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)


@click.command("sign", short_help="Sign a transcript's head in a detached note.")
@click.argument("path", type=click.Path(dir_okay=False))
@signer_option(
    "--key", "keys", "A signer key file (from `transcript keygen`); repeat it and each key signs."
)
@click.option(
    "--ssh",
    "ssh_keys",
    metavar="KEY",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="An SSH private key file: sign with `ssh-keygen -Y sign -n mini-harness.transcript` "
    "(checked with an allowed-signers file).",
)
@click.option(
    "-o",
    "--output",
    "note",
    cls=SingleOption,
    metavar="NOTE",
    type=click.Path(dir_okay=False),
    help="Where the signed head is written (default: PATH.sig).",
)
def sign_command(
    path: str, keys: tuple[str, ...], ssh_keys: tuple[str, ...], note: str | None
) -> None:
    """Sign the head of PATH (its last line: the transcript's id, the line's seq and the
    full SHA-256 of its bytes, and the time) in a detached note, in the C2SP signed-note
    format. PATH must verify.

    A note already at NOTE for this same head keeps its signatures and gains these (a
    witness co-signs); one for an earlier head of this transcript, which PATH still
    reaches, is replaced; any other is left as it is and nothing is signed (exit 1).

    Exit codes: 0 signed; 1 PATH does not verify, or NOTE is kept; 2 usage errors.
    """
    if not keys and not ssh_keys:
        raise UsageError("sign needs a key: --key SIGNER (from `transcript keygen`) or --ssh KEY")
    if note is None and path == "-":
        raise UsageError("signing standard input needs -o NOTE: there is no PATH.sig beside it")
    signers: list[Signer] = list(signer_keys(keys))
    if ssh_keys:
        from mini_harness.transcripts.ssh_note import SshSigner, ssh_keygen

        ssh_keygen()
        signers += [SshSigner(key) for key in ssh_keys]
    outcome = sign_transcript(path, signers, note)
    info(told(outcome, path))
    signatures = len(read_note(outcome.note).signatures)
    if outcome.action == COSIGNED:
        info(f"{outcome.note} holds {counted(signatures, 'signature')}")

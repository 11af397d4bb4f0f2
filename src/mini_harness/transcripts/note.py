"""Signed notes: a text and the signatures of named keys over it, in the C2SP signed-note
format (the one Go's golang.org/x/mod/sumdb/note reads and writes), and Ed25519 keys in
its signer and verifier key formats, so keys and notes work with Go's and C2SP tools.

A note's text counts only when a key the reader trusts signed it: a signature by a key it
does not know is kept and ignored, a trusted key's signature that fails to verify refuses
the whole note, and a note no trusted key signed is refused. The Ed25519 arithmetic comes
from the `cryptography` package (the `sign` extra), imported when a key is first used.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from mini_harness.errors import NoteFormatError, SignatureRefusedError, SigningUnavailableError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519 = b"\x01"
"""The signature type byte of Ed25519 keys: it starts a key's encoding and is hashed into
its key id."""
SIGNATURE_PREFIX = "\u2014 "
"""A signature line starts with an em dash and a space."""
MAX_SIGNATURES = 100
"""More signature lines than this make a note malformed (as in Go's reader)."""
INSTALL = 'pip install "mini-harness[sign]"'
_PRIVATE = "PRIVATE+KEY+"


def valid_name(name: str) -> bool:
    """A key name: not empty, no whitespace, no `+`, no control character, valid UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as an argument in a bad locale gives
        return False
    return bool(name) and "+" not in name and not any(c.isspace() or c < " " for c in name)


def key_id(name: str, public: bytes) -> int:
    """The 32-bit id of a key: the first four bytes of SHA-256(name, newline, `public`),
    big-endian; `public` is the signature type byte(s) then the public key."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + public).digest()
    return int.from_bytes(digest[:4], "big")


def _decoded(text: str) -> bytes | None:
    """Standard base64 with padding, or None."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def require_cryptography() -> None:
    """Raise SigningUnavailableError, with the install line, unless `cryptography` (the
    `sign` extra) can be imported."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise SigningUnavailableError(
            f"Ed25519 signatures need the cryptography package: {INSTALL}"
        ) from None


def _key_fields(text: str, what: str) -> tuple[str, int, bytes]:
    """The name, id and raw key (type byte first) of `NAME+ID+BASE64`, or NoteFormatError.
    The text is cut at its first two plus signs (base64 may hold more)."""
    fields = text.split("+", 2)
    if len(fields) != 3:
        raise NoteFormatError(f"{what}: not a key (NAME+ID+KEY)")
    name, hex_id, data = fields
    raw = _decoded(data)
    if len(hex_id) != 8 or not all(c in "0123456789abcdefABCDEF" for c in hex_id):
        raise NoteFormatError(f"{what}: the key id must be 8 hex digits, not {hex_id!r}")
    if not valid_name(name):
        raise NoteFormatError(f"{what}: {name!r} is not a key name (not empty, no spaces, no '+')")
    if not raw:
        raise NoteFormatError(f"{what}: the key is not standard base64")
    if raw[:1] != ED25519:
        raise NoteFormatError(f"{what}: not an Ed25519 key (type byte {raw[0]:#04x})")
    if len(raw) != 33:
        raise NoteFormatError(f"{what}: an Ed25519 key is 32 bytes, this one {len(raw) - 1}")
    return name, int(hex_id, 16), raw


@attrs.frozen
class VerifierKey:
    """A public key that checks signatures: `<name>+<id>+<base64(0x01 || key)>`."""

    name: str
    key_id: int
    public: bytes  # the type byte, then the 32-byte Ed25519 key

    @classmethod
    def parse(cls, text: str, source: str = "verifier key") -> VerifierKey:
        """Read a verifier key, checking its id; NoteFormatError says what is wrong."""
        name, number, public = _key_fields(text, source)
        if number != key_id(name, public):
            raise NoteFormatError(f"{source}: the key id does not match the key")
        return cls(name, number, public)

    @property
    def shown(self) -> str:
        """How the key is named to a person: its name and id, as in a signature line."""
        return f"{self.name}+{self.key_id:08x}"

    def __str__(self) -> str:
        return f"{self.shown}+{_encoded(self.public)}"

    def verify(self, text: bytes, signature: bytes) -> bool:
        """Whether `signature` is this key's Ed25519 signature of `text`."""
        require_cryptography()
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        key = Ed25519PublicKey.from_public_bytes(self.public[1:])
        try:
            key.verify(signature, text)
        except InvalidSignature:
            return False
        return True


@attrs.frozen(repr=False)
class SignerKey:
    """A private key that signs: `PRIVATE+KEY+<name>+<id>+<base64(0x01 || seed)>`. Its
    id is its public key's. The repr never shows the seed."""

    name: str
    key_id: int
    seed: bytes  # the 32-byte Ed25519 seed

    @classmethod
    def parse(cls, text: str, source: str = "signer key") -> SignerKey:
        """Read a signer key, checking its id against the public key it makes."""
        if not text.startswith(_PRIVATE):
            raise NoteFormatError(f"{source}: not a signer key (PRIVATE+KEY+NAME+ID+KEY)")
        name, number, raw = _key_fields(text.removeprefix(_PRIVATE), source)
        key = cls(name, number, raw[1:])
        if number != key.verifier().key_id:
            raise NoteFormatError(f"{source}: the key id does not match the key")
        return key

    @classmethod
    def generate(cls, name: str) -> SignerKey:
        """A new key named `name`, from the operating system's random bytes."""
        if not valid_name(name):
            raise NoteFormatError(
                f"{name!r} is not a key name: not empty, no spaces, no '+' (e.g. example.com/ci)"
            )
        seed = os.urandom(32)
        return cls(name, cls(name, 0, seed).verifier().key_id, seed)

    def _private(self) -> Ed25519PrivateKey:
        require_cryptography()
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return Ed25519PrivateKey.from_private_bytes(self.seed)

    def verifier(self) -> VerifierKey:
        """The verifier key of this key, to give to whoever checks its signatures."""
        require_cryptography()
        from cryptography.hazmat.primitives import serialization

        raw = (
            self._private()
            .public_key()
            .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        )
        public = ED25519 + raw
        return VerifierKey(self.name, key_id(self.name, public), public)

    def signature(self, text: bytes) -> NoteSignature:
        """This key's signature line for `text` (Ed25519 is deterministic)."""
        return NoteSignature.made(self.name, self.key_id, self._private().sign(text))

    def __str__(self) -> str:
        return f"{_PRIVATE}{self.name}+{self.key_id:08x}+{_encoded(ED25519 + self.seed)}"

    def __repr__(self) -> str:
        return f"<SignerKey({self.name}+{self.key_id:08x})>"


@attrs.frozen
class NoteSignature:
    """One signature line: the key's name and id, and what the key made of the text.

    `encoded` is the base64 of the line as written (id then signature), kept so that a
    note signed again writes its other lines byte for byte as they were.
    """

    name: str
    key_id: int
    encoded: str

    @classmethod
    def made(cls, name: str, number: int, signature: bytes) -> NoteSignature:
        return cls(name, number, _encoded(number.to_bytes(4, "big") + signature))

    @property
    def signature(self) -> bytes:
        """The signature, after the key id."""
        return base64.b64decode(self.encoded)[4:]

    @property
    def shown(self) -> str:
        return f"{self.name}+{self.key_id:08x}"

    def line(self) -> str:
        return f"{SIGNATURE_PREFIX}{self.name} {self.encoded}\n"


class Signer(Protocol):
    """What signs a note: an Ed25519 SignerKey, or an SSH key through ssh-keygen."""

    def signature(self, text: bytes) -> NoteSignature: ...


class Verifier(Protocol):
    """A trusted key that checks one signature; `shown` names it to a person."""

    @property
    def shown(self) -> str: ...

    def verify(self, text: bytes, signature: bytes) -> bool: ...


TrustedKeys = Callable[[NoteSignature], "Verifier | None"]
"""Finds the trusted key that made a signature line (None: a key not trusted here)."""


@attrs.frozen
class Note:
    """A text (ending in a newline) and its signature lines, in order."""

    text: str
    signatures: tuple[NoteSignature, ...] = ()

    @classmethod
    def parse(cls, data: bytes, source: str = "note") -> Note:
        """Read a note as Go's note.Open does, without checking signatures: valid UTF-8,
        no control character but newline, the text up to the last blank line, then
        signature lines (at most MAX_SIGNATURES). NoteFormatError says what is wrong."""
        try:
            message = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NoteFormatError(
                f"{source} is not a signed note: not UTF-8 ({exc.reason})"
            ) from None
        if any(c < " " and c != "\n" for c in message):
            raise NoteFormatError(
                f"{source} is not a signed note: it holds a control character (a note has "
                "none but newlines)"
            )
        split = message.rfind("\n\n")
        if split < 0 or not message.endswith("\n") or split + 2 == len(message):
            raise NoteFormatError(
                f"{source} is not a signed note: no signature lines after a blank line"
            )
        text, lines = message[: split + 1], message[split + 2 : -1].split("\n")
        if len(lines) > MAX_SIGNATURES:
            raise NoteFormatError(f"{source}: more than {MAX_SIGNATURES} signatures ({len(lines)})")
        return cls(text, tuple(_signature_line(line, source) for line in lines))

    def to_bytes(self) -> bytes:
        return (self.text + "\n" + "".join(s.line() for s in self.signatures)).encode("utf-8")

    def signed(self, signers: Iterable[Signer]) -> Note:
        """This note with the signers' signatures after its own; a signature it already has
        by the same key (name and id) is replaced, as Go's note.Sign does."""
        text = self.text.encode("utf-8")
        new = [signer.signature(text) for signer in signers]
        keys = {(s.name, s.key_id) for s in new}
        kept = [s for s in self.signatures if (s.name, s.key_id) not in keys]
        return Note(self.text, (*kept, *new))

    def open(self, trusted: TrustedKeys, source: str = "the note") -> tuple[str, ...]:
        """Check the signatures by trusted keys; the names of the keys whose signatures
        verify, in order. Refused (SignatureRefusedError) when a trusted key's signature
        does not verify, or when no trusted key signed the note."""
        text = self.text.encode("utf-8")
        seen: set[tuple[str, int]] = set()
        signers: list[str] = []
        for signature in self.signatures:
            key = (signature.name, signature.key_id)
            if key in seen:  # one key's signatures count once, as in Go's reader
                continue
            verifier = trusted(signature)
            if verifier is None:
                continue
            seen.add(key)
            if not verifier.verify(text, signature.signature):
                raise SignatureRefusedError(
                    f"the signature by {verifier.shown} in {source} does not verify: the "
                    "note was changed after it was signed"
                )
            signers.append(verifier.shown)
        if not signers:
            names = ", ".join(dict.fromkeys(s.shown for s in self.signatures))
            raise SignatureRefusedError(
                f"no signature in {source} is by a trusted key (it is signed by {names})"
            )
        return tuple(signers)


def _signature_line(line: str, source: str) -> NoteSignature:
    if not line.startswith(SIGNATURE_PREFIX):
        raise NoteFormatError(
            f"{source} is not a signed note: a line after the blank line does not start "
            f"with '{SIGNATURE_PREFIX}': {line[:60]!r}"
        )
    name, _, encoded = line.removeprefix(SIGNATURE_PREFIX).partition(" ")
    raw = _decoded(encoded)
    if raw is None or not valid_name(name) or len(raw) < 5:
        raise NoteFormatError(f"{source}: malformed signature line {line[:60]!r}")
    return NoteSignature(name, int.from_bytes(raw[:4], "big"), encoded)


def ed25519_keys(keys: Sequence[VerifierKey]) -> TrustedKeys:
    """Trusted keys looked up by name and id (unknown keys are not trusted)."""
    table = {(key.name, key.key_id): key for key in keys}

    def find(signature: NoteSignature) -> Verifier | None:
        return table.get((signature.name, signature.key_id))

    return find

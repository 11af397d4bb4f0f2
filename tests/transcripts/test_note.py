"""Signed notes and their keys, against the published vectors of Go's
golang.org/x/mod/sumdb/note (note_test.go): the same keys, text and signatures, byte for
byte, and the same rules for what a note and a key must look like."""

from __future__ import annotations

import hashlib

import pytest

from mini_harness.errors import NoteFormatError, SignatureRefusedError
from mini_harness.transcripts.note import (
    ED25519,
    Note,
    SignerKey,
    VerifierKey,
    ed25519_keys,
    key_id,
)

# The vectors of note_test.go (TestNewSigner, TestSign, TestOpen).
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngot"
    "pRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWL"
    "ox33WWd1RvMc+QQ=\n"
)


def _note(*signatures: str) -> bytes:
    return (TEXT + "\n" + "".join(signatures)).encode("utf-8")


class TestPublishedVectors:
    def test_signer_key_makes_the_published_verifier_key(self) -> None:
        """Go's signer key reads, and its public half is Go's verifier key, id included."""
        key = SignerKey.parse(PETER_SKEY)
        assert str(key.verifier()) == PETER_VKEY
        assert str(key) == PETER_SKEY

    def test_key_id_is_sha256_of_name_newline_type_and_key(self) -> None:
        """The id is the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key)."""
        verifier = VerifierKey.parse(PETER_VKEY)
        assert verifier.public[:1] == ED25519
        digest = hashlib.sha256(b"PeterNeumann\n\x01" + verifier.public[1:]).digest()
        assert verifier.key_id == int.from_bytes(digest[:4], "big") == 0xC74F20A3
        assert key_id("PeterNeumann", verifier.public) == 0xC74F20A3

    def test_signing_reproduces_the_published_note_byte_for_byte(self) -> None:
        """Ed25519 is deterministic: signing Go's text with Go's key gives Go's note."""
        signed = Note(TEXT).signed([SignerKey.parse(PETER_SKEY)])
        assert signed.to_bytes() == _note(PETER_SIG)

    def test_signing_again_replaces_the_same_keys_signature(self) -> None:
        """A note's signature by the signing key is replaced, as Go's note.Sign does."""
        stale = Note.parse(_note(PETER_SIG.replace("x08go/", "x08go/AAAA")[:-1] + "\n"))
        assert stale.signed([SignerKey.parse(PETER_SKEY)]).to_bytes() == _note(PETER_SIG)

    def test_both_published_signatures_verify(self) -> None:
        """Peter's and Enoch's signatures of the text verify with their verifier keys."""
        note = Note.parse(_note(PETER_SIG, ENOCH_SIG))
        keys = [VerifierKey.parse(PETER_VKEY), VerifierKey.parse(ENOCH_VKEY)]
        assert note.open(ed25519_keys(keys)) == ("PeterNeumann+c74f20a3", "EnochRoot+af0cfe78")


class TestOpen:
    def test_unknown_keys_are_ignored(self) -> None:
        """A signature by a key that is not trusted is passed over."""
        note = Note.parse(_note(PETER_SIG, ENOCH_SIG))
        assert note.open(ed25519_keys([VerifierKey.parse(PETER_VKEY)])) == (
            "PeterNeumann+c74f20a3",
        )

    def test_no_trusted_signature_is_refused(self) -> None:
        """A note no trusted key signed is refused, naming who did sign it."""
        note = Note.parse(_note(PETER_SIG, ENOCH_SIG))
        with pytest.raises(SignatureRefusedError, match="no signature in the note is by a"):
            note.open(ed25519_keys([]))

    def test_a_trusted_keys_bad_signature_refuses_the_note(self) -> None:
        """A trusted key's signature that does not verify refuses the whole note, even when
        another trusted signature verifies (Go's "invalid signature" case)."""
        bad = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
        keys = ed25519_keys([VerifierKey.parse(PETER_VKEY), VerifierKey.parse(ENOCH_VKEY)])
        with pytest.raises(SignatureRefusedError, match=r"PeterNeumann\+c74f20a3 .* does not"):
            Note.parse(_note(ENOCH_SIG, bad)).open(keys)

    def test_a_text_changed_after_signing_is_refused(self) -> None:
        """One character of the text changed: the signature no longer verifies."""
        data = _note(PETER_SIG).replace(b"answer", b"Answer")
        with pytest.raises(SignatureRefusedError, match="changed after it was signed"):
            Note.parse(data).open(ed25519_keys([VerifierKey.parse(PETER_VKEY)]))

    def test_repeated_signatures_count_once(self) -> None:
        """The same key's signature twice is checked once (Go drops repeats)."""
        note = Note.parse(_note(PETER_SIG, PETER_SIG, ENOCH_SIG))
        assert note.open(ed25519_keys([VerifierKey.parse(PETER_VKEY)])) == (
            "PeterNeumann+c74f20a3",
        )

    @pytest.mark.parametrize(
        "message",
        [
            TEXT,
            TEXT + "\n",
            TEXT + "\n" + PETER_SIG[:-1],
            "\x01" + TEXT + "\n" + PETER_SIG,
            TEXT + "\n" + "\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1"
            "FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
            TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
            TEXT + "\n" + PETER_SIG * 101,
        ],
        ids=[
            "no signatures",
            "blank line only",
            "no final newline",
            "control character",
            "name with a space",
            "line without the dash",
            "101 signatures",
        ],
    )
    def test_malformed_notes_are_refused(self, message: str) -> None:
        """The malformed notes of Go's TestOpen are not read as notes."""
        with pytest.raises(NoteFormatError):
            Note.parse(message.encode("utf-8"))

    def test_invalid_utf8_is_refused(self) -> None:
        """A note that is not UTF-8 is not a note."""
        with pytest.raises(NoteFormatError, match="not UTF-8"):
            Note.parse(b"\xff" + _note(PETER_SIG))


class TestKeys:
    def test_generated_keys_sign_and_verify(self) -> None:
        """A new key pair round-trips through its text forms and checks its own signature."""
        key = SignerKey.generate("example.com/ci")
        again = SignerKey.parse(str(key))
        verifier = VerifierKey.parse(str(key.verifier()))
        signature = again.signature(b"hi\n")
        assert verifier.verify(b"hi\n", signature.signature)
        assert not verifier.verify(b"ho\n", signature.signature)
        assert "PRIVATE" not in repr(key)
        assert str(key.seed) not in repr(key)

    @pytest.mark.parametrize("name", ["", "a b", "a+b", "tab\there"])
    def test_a_name_that_cannot_be_a_key_name_is_refused(self, name: str) -> None:
        """Key names are not empty and hold no whitespace or plus sign."""
        with pytest.raises(NoteFormatError, match="is not a key name"):
            SignerKey.generate(name)

    def test_every_mangled_verifier_key_is_refused(self) -> None:
        """Any part of the key, or the key with any byte changed, is not a verifier key
        (Go's TestNewVerifier)."""
        for i in range(len(PETER_VKEY) + 1):
            for j in range(i + 1, len(PETER_VKEY) + 1):
                if (i, j) != (0, len(PETER_VKEY)):
                    with pytest.raises(NoteFormatError):
                        VerifierKey.parse(PETER_VKEY[i:j])
        for i, char in enumerate(PETER_VKEY):
            with pytest.raises(NoteFormatError):
                VerifierKey.parse(PETER_VKEY[:i] + chr(ord(char) + 1) + PETER_VKEY[i + 1 :])

    def test_every_mangled_signer_key_is_refused(self) -> None:
        """Likewise for the signer key (Go's TestNewSigner)."""
        for i, char in enumerate(PETER_SKEY):
            with pytest.raises(NoteFormatError):
                SignerKey.parse(PETER_SKEY[:i] + chr(ord(char) + 1) + PETER_SKEY[i + 1 :])
        for j in range(1, len(PETER_SKEY)):
            with pytest.raises(NoteFormatError):
                SignerKey.parse(PETER_SKEY[:j])

    @pytest.mark.parametrize(
        ("vkey", "why"),
        [
            ("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==", "32"),
            ("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "Ed25519"),
        ],
        ids=["wrong length", "unknown algorithm"],
    )
    def test_wrong_length_and_unknown_algorithm(self, vkey: str, why: str) -> None:
        """Go's two hand-made bad keys (their ids adjusted to match) are refused."""
        with pytest.raises(NoteFormatError, match=why):
            VerifierKey.parse(vkey)

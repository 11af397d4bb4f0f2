"""Signed heads: a transcript's last line signed in a detached note, and verify proving the
file still ends with it. Every way of tampering fails, each with its own message."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.errors import NoteFormatError, SignatureRefusedError
from mini_harness.transcripts import JsonlTranscript, line_hash
from mini_harness.transcripts.head_note import HeadClaim
from mini_harness.transcripts.note import Note, SignerKey
from mini_harness.transcripts.signing import (
    COSIGNED,
    CREATED,
    REPLACED,
    TrustedKeys,
    note_path_for,
    read_note,
    read_verifier_keys,
    sign_transcript,
    verify_signed,
)

TIME = "2026-01-02T03:04:05Z"


@pytest.fixture(name="key", scope="module")
def _key() -> SignerKey:
    return SignerKey.generate("example.com/ci")


@pytest.fixture(name="trusted")
def _trusted(key: SignerKey) -> TrustedKeys:
    return TrustedKeys((key.verifier(),))


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _rechained(lines: list[bytes], start: int) -> list[bytes]:
    """The lines with `prev` rebuilt from line `start` on: what a writer who plans to
    rewrite history does, so that the chain alone shows nothing."""
    out = lines[:start]
    for line in lines[start:]:
        event = orjson.loads(line)
        event["prev"] = line_hash(out[-1][:-1])
        out.append(orjson.dumps(event) + b"\n")
    return out


def _write(path: Path, registry: ToolRegistry, *texts: str) -> Path:
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        for text in texts:
            runtime.dispatch("echo", {"text": text})
    return path


class TestSignAndVerify:
    def test_round_trip(self, log: Path, key: SignerKey, trusted: TrustedKeys) -> None:
        """A signed transcript verifies against its note: the note names the transcript,
        the last line's seq and its full SHA-256; the file ends with that line."""
        outcome = sign_transcript(str(log), [key], time=TIME)
        last = _lines(log)[-1][:-1]
        header = orjson.loads(_lines(log)[0])
        assert outcome.action == CREATED
        assert outcome.note == note_path_for(str(log)) == f"{log}.sig"
        assert read_note(outcome.note).text == (
            f"mini-harness.transcript/{header['transcriptId']}\nseq 7\n"
            f"sha256 {hashlib.sha256(last).hexdigest()}\ntime {TIME}\n"
        )
        report = verify_signed(str(log), outcome.note, trusted)
        assert report.ok, report.problems()
        assert report.signed is not None
        assert report.signed.signers == (key.verifier().shown,)
        assert (report.signed_line, report.signed_head_reached) == (8, True)

    def test_a_witness_cosigns_the_same_head(
        self, log: Path, key: SignerKey, trusted: TrustedKeys
    ) -> None:
        """A second key signing the same head adds its signature to the note; either key
        alone then proves the head, and the first signature is kept byte for byte."""
        witness = SignerKey.generate("witness.example")
        first = sign_transcript(str(log), [key], time=TIME)
        before = Path(first.note).read_bytes()
        second = sign_transcript(str(log), [witness], time="2030-01-01T00:00:00Z")
        assert second.action == COSIGNED
        assert second.claim.time == TIME  # the text signed is the first note's
        after = Path(second.note).read_bytes()
        assert after.startswith(before)
        assert len(read_note(second.note).signatures) == 2
        alone = TrustedKeys((witness.verifier(),))
        assert verify_signed(str(log), second.note, alone).ok
        assert verify_signed(str(log), second.note, trusted).ok

    def test_a_note_of_an_earlier_head_is_replaced(
        self, tmp_path: Path, registry: ToolRegistry, key: SignerKey, trusted: TrustedKeys
    ) -> None:
        """After the file grew, signing again replaces the note of its earlier head."""
        log = _write(tmp_path / "t.jsonl", registry, "a")
        sign_transcript(str(log), [key])
        _write(log, registry, "b")
        outcome = sign_transcript(str(log), [key])
        assert (outcome.action, outcome.replaced_seq, outcome.claim.seq) == (REPLACED, 3, 6)
        assert verify_signed(str(log), outcome.note, trusted).ok

    def test_a_note_the_file_does_not_reach_is_kept(
        self, log: Path, key: SignerKey, trusted: TrustedKeys
    ) -> None:
        """A note of a head the file no longer has may be evidence: it is not overwritten,
        and nothing is signed."""
        note = sign_transcript(str(log), [key]).note
        kept = Path(note).read_bytes()
        lines = _lines(log)
        log.write_bytes(
            b"".join(_rechained([*lines[:3], lines[3].replace(b'"a"', b'"A"'), *lines[4:]], 4))
        )
        with pytest.raises(SignatureRefusedError, match="is not overwritten: it signs a head"):
            sign_transcript(str(log), [key])
        assert Path(note).read_bytes() == kept

    def test_a_file_that_does_not_verify_is_not_signed(self, log: Path, key: SignerKey) -> None:
        """Damage, a broken chain or a torn tail: nothing is signed."""
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCal')
        with pytest.raises(SignatureRefusedError, match=r"it does not verify .*torn tail"):
            sign_transcript(str(log), [key])
        assert not os.path.exists(note_path_for(str(log)))

    def test_something_else_at_the_note_path_is_not_overwritten(
        self, log: Path, key: SignerKey
    ) -> None:
        """A file at the note's path that is not a signed head stays as it is."""
        note = Path(note_path_for(str(log)))
        note.write_text("my notes\n")
        with pytest.raises(NoteFormatError, match="not overwritten"):
            sign_transcript(str(log), [key])
        assert note.read_text() == "my notes\n"


def _edit_middle(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    lines[3] = lines[3].replace(b'"text":"a"', b'"text":"A"')
    return lines


def _rewrite(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    return _rechained(_edit_middle(lines, other), 4)


def _truncate(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    return lines[:-2]


def _append(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    last = orjson.loads(lines[-1])
    # An event of a type this reader does not know: a notice, not a problem, by itself.
    extra = {"type": "Remark", "seq": last["seq"] + 1, "ts": last["ts"]}
    extra["prev"] = line_hash(lines[-1][:-1])
    return [*lines, orjson.dumps(extra) + b"\n"]


def _swap(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    lines[4], lines[5] = lines[5], lines[4]
    return lines


Tamper = Callable[[list[bytes], list[bytes]], list[bytes]]


class TestTampering:
    @pytest.mark.parametrize(
        ("tamper", "message"),
        [
            (_edit_middle, r"^line 5 \(seq 4, byte \d+\): prev does not match the hash"),
            (
                _rewrite,
                r"^line 8 \(seq 7\) is not the line that was signed: its SHA-256 is [0-9a-f]{64}, "
                r"the signed one's [0-9a-f]{64} \(the history up to the signed head was "
                r"rewritten after it was signed\)$",
            ),
            (
                _truncate,
                r"^the file ends at seq 5, before the signed head at seq 7: it was cut after "
                r"the head was signed$",
            ),
            (
                _append,
                r"^1 line after the signed head \(line 8, seq 7\) is covered by no signature: "
                r"written after it was signed$",
            ),
            (_swap, r"^line 5 \(seq 5, byte \d+\): seq 5, expected 4$"),
        ],
        ids=["edited line", "rewritten history", "truncated", "appended", "swapped lines"],
    )
    def test_the_file_tampered_with(
        self, log: Path, key: SignerKey, trusted: TrustedKeys, tamper: Tamper, message: str
    ) -> None:
        """Each change to the file since it was signed fails verify, saying what differs."""
        note = sign_transcript(str(log), [key]).note
        log.write_bytes(b"".join(tamper(_lines(log), [])))
        report = verify_signed(str(log), note, trusted)
        assert not report.ok
        assert any(re.search(message, p) for p in report.problems()), report.problems()

    def test_a_note_for_another_transcript(
        self, log: Path, tmp_path: Path, registry: ToolRegistry, key: SignerKey,
        trusted: TrustedKeys,
    ) -> None:  # fmt: skip
        """Another transcript's note, however well signed, does not prove this one."""
        other = _write(tmp_path / "other.jsonl", registry, "a", "b", "c")
        note = sign_transcript(str(other), [key]).note
        report = verify_signed(str(log), note, trusted)
        mine, theirs = (orjson.loads(_lines(p)[0])["transcriptId"] for p in (log, other))
        assert report.problems() == [
            f"{note} signs the head of transcript {theirs}, not of this one ({mine})"
        ]

    def test_a_wrong_key(self, log: Path, key: SignerKey) -> None:
        """A note verified with a key that did not sign it is refused."""
        note = sign_transcript(str(log), [key]).note
        stranger = TrustedKeys((SignerKey.generate("stranger").verifier(),))
        report = verify_signed(str(log), note, stranger)
        assert report.problems() == [
            f"no signature in {note} is by a trusted key (it is signed by {key.verifier().shown})"
        ]
        assert report.to_json()["signedHead"] == {"note": note, "refused": report.problems()[0]}

    @pytest.mark.parametrize(
        ("field", "value"),
        [("seq 7", "seq 6"), ("time 20", "time 19")],
        ids=["seq", "time"],
    )
    def test_a_note_edited_after_signing(
        self, log: Path, key: SignerKey, trusted: TrustedKeys, field: str, value: str
    ) -> None:
        """A note whose text was changed after it was signed is refused."""
        note = Path(sign_transcript(str(log), [key]).note)
        note.write_text(note.read_text().replace(field, value, 1))
        report = verify_signed(str(log), str(note), trusted)
        assert report.problems() == [
            f"the signature by {key.verifier().shown} in {note} does not verify: the note "
            "was changed after it was signed"
        ]

    def test_every_tampering_has_its_own_message(
        self, tmp_path: Path, registry: ToolRegistry, key: SignerKey, trusted: TrustedKeys
    ) -> None:
        """The problems of the tamperings above are told apart by their words alone."""
        words: set[str] = set()
        other = _write(tmp_path / "other.jsonl", registry, "x")
        cases: list[tuple[Tamper | None, str]] = [
            (t, "note") for t in (_edit_middle, _rewrite, _truncate, _append, _swap)
        ]
        cases += [(None, "other"), (None, "stranger"), (None, "edited")]
        for number, (tamper, how) in enumerate(cases):
            log = _write(tmp_path / f"t{number}.jsonl", registry, "a", "b", "c")
            note = sign_transcript(str(log), [key]).note
            keys = trusted
            if tamper is not None:
                log.write_bytes(b"".join(tamper(_lines(log), [])))
            elif how == "other":
                note = sign_transcript(str(other), [key]).note
            elif how == "stranger":
                keys = TrustedKeys((SignerKey.generate("stranger").verifier(),))
            else:
                Path(note).write_text(Path(note).read_text().replace("seq 7", "seq 6"))
            first = verify_signed(str(log), note, keys).problems()[0]
            words.add(re.sub(r"[0-9a-f]{16,}|\d+|/\S+", "#", first))
        assert len(words) == len(cases), words


class TestVerifierKeys:
    def test_keys_from_files_and_values(self, tmp_path: Path) -> None:
        """--vkey takes a key or a file of keys (comments and blank lines skipped)."""
        a, b = (SignerKey.generate(n).verifier() for n in ("a", "b"))
        listed = tmp_path / "keys"
        listed.write_text(f"# the team\n{a}\n\n{b}\n")
        assert read_verifier_keys([str(listed), str(a)]) == (a, b)

    def test_two_keys_with_one_name_and_id_are_refused(self) -> None:
        """Keys that a signature line could not tell apart are refused."""
        a = SignerKey.generate("a").verifier()
        forged = str(a)[:-5] + ("B" if str(a)[-5] != "B" else "C") + str(a)[-4:]
        with pytest.raises(NoteFormatError):
            read_verifier_keys([str(a), forged])

    def test_a_value_that_is_neither_is_refused(self, tmp_path: Path) -> None:
        """A --vkey that is no file and no key says so."""
        with pytest.raises(NoteFormatError, match="no such file, and not a verifier key"):
            read_verifier_keys([str(tmp_path / "missing.vkey")])


class TestHeadClaim:
    def test_text_round_trips(self) -> None:
        """The claim's text reads back as the same claim."""
        claim = HeadClaim("ab" * 16, 41, "0" * 64, TIME)
        assert HeadClaim.parse(claim.text()) == claim

    @pytest.mark.parametrize(
        "text",
        [
            "other.origin/x\nseq 1\nsha256 " + "0" * 64 + "\ntime " + TIME + "\n",
            "mini-harness.transcript/x\nseq 01\nsha256 " + "0" * 64 + "\ntime " + TIME + "\n",
            "mini-harness.transcript/x\nseq 1\nsha256 " + "0" * 32 + "\ntime " + TIME + "\n",
            "mini-harness.transcript/x\nseq 1\nsha256 " + "0" * 64 + "\n",
        ],
        ids=["other origin", "leading zero", "short hash", "no time"],
    )
    def test_other_texts_are_not_signed_heads(self, text: str) -> None:
        """A note signed by a trusted key over some other text is not taken for a head."""
        with pytest.raises(NoteFormatError, match="not the signed head"):
            HeadClaim.parse(text)

    def test_a_signed_note_of_other_text_is_refused(
        self, tmp_path: Path, log: Path, key: SignerKey, trusted: TrustedKeys
    ) -> None:
        """verify reads the text only once a trusted signature covers it, then refuses
        text that is not a signed head (exit 2: the wrong file was given)."""
        note = tmp_path / "other.sig"
        note.write_bytes(Note("hello\n").signed([key]).to_bytes())
        with pytest.raises(NoteFormatError, match="is not the signed head"):
            verify_signed(str(log), str(note), trusted)

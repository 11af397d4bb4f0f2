"""The error hierarchy: everything mini-harness raises on purpose derives from MiniHarnessError."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import ClassVar

import attrs


class ExitCode(enum.IntEnum):
    """What a command's exit status says, the same for every command."""

    OK = 0
    FAILED = 1
    """The work failed: a tool call, a run without a final answer, a log with problems."""
    USAGE = 2
    """Usage errors, and input that cannot be used (a transcript that cannot be read)."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT); a termination signal exits 128 + its number (`TerminatedError`)."""


class TerminatedError(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP) taken the way Ctrl-C is: whatever is running
    stops as an interrupt stops it (a run ends `cancelled`, recorded), and the command
    exits 128 + the signal's number, as a shell reports a process the signal ended."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(f"terminated by {name}")
        self.signum = signum
        self.message = f"terminated by {name}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def interruption(exc: KeyboardInterrupt) -> str:
    """What stopped the command: `interrupted` (Ctrl-C) or `terminated by SIGTERM`."""
    return exc.message if isinstance(exc, TerminatedError) else "interrupted"


STOP_REASON_CODES = {
    "final": ExitCode.OK,
    "max_steps": ExitCode.FAILED,
    "model_error": ExitCode.FAILED,
    "budget": ExitCode.FAILED,
    "cancelled": ExitCode.INTERRUPTED,
}
"""The exit code of an agent run, by how it stopped."""

UNUSABLE_PROBLEMS = frozenset({"damage"})
"""The problems of a log that make it input that cannot be used: a line damaged mid-file,
where reading stops. Any other (integrity, protocol, a torn tail, something in doubt)
is a log with problems."""


def exit_code_of(
    *,
    problems: Iterable[str] = (),
    in_doubt: int = 0,
    differs: bool = False,
    failed: bool = False,
    stop_reason: str | None = None,
    unreadable: bool = False,
    interrupted: bool = False,
) -> ExitCode:
    """The exit code of what a command did and found, by the one rule of every command:
    INTERRUPTED when it was interrupted (or its agent run cancelled); USAGE when its input
    cannot be used (`unreadable`, or a log with a problem of UNUSABLE_PROBLEMS among the
    kinds of `problems`); FAILED when the work failed: a log with any other problem or
    with calls `in_doubt`, a re-run that `differs` from the record, a tool call that
    `failed`, an agent run that stopped without a final answer (`stop_reason`); else OK."""
    problems = set(problems)
    reason = STOP_REASON_CODES[stop_reason] if stop_reason is not None else ExitCode.OK
    if interrupted or reason == ExitCode.INTERRUPTED:
        return ExitCode.INTERRUPTED
    if unreadable or problems & UNUSABLE_PROBLEMS:
        return ExitCode.USAGE
    if problems or in_doubt or differs or failed or reason == ExitCode.FAILED:
        return ExitCode.FAILED
    return ExitCode.OK


def counted(number: object, one: str, many: str | None = None) -> str:
    """`1 run`, `2 runs`, `1 property`, `3 properties`: the noun agrees with the count.

    Every message that counts something says it this way (`many` defaults to one + "s")."""
    return f"{number} {one if number == 1 else many or one + 's'}"


@attrs.frozen
class Violation:
    """One way an input breaks its schema: where (`echo.items[0]`), which keyword, what."""

    path: str
    keyword: str
    message: str

    @property
    def full_message(self) -> str:
        return f"Invalid input for {self.path}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


class MiniHarnessError(Exception):
    """Root of every error mini-harness raises on purpose. `exit_code` is the status a
    command that stops on it exits with: a usage error unless the class says otherwise."""

    message: str
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- JSON values --------------------------------------------------------------


class NotJsonError(ValueError):
    """The value is not a JSON value; the message says where and why."""


class JsonSyntaxError(NotJsonError):
    """The text does not parse as JSON; the message gives the parser's reason."""


class TooDeepError(NotJsonError):
    """The value nests arrays and objects deeper than MAX_JSON_DEPTH (or refers to itself)."""


# --- registration -----------------------------------------------------------


class RegistrationError(MiniHarnessError):
    """A tool could not be registered; `tool` names it."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool = tool


class DuplicateToolError(RegistrationError):
    """A tool with the same name is already registered."""


class InvalidToolNameError(RegistrationError):
    """The name is not 1-64 characters from a-z, A-Z, 0-9, _ and - (the whole name)."""


class InvalidSchemaError(RegistrationError):
    """The input schema is not a valid JSON Schema with an object root."""


class RemoteSchemaError(InvalidSchemaError):
    """The schema names a resource outside itself (`$schema`, `$ref`); `uri` is what it names.

    Nothing is fetched at registration: a tool's schema must be self-contained.
    """

    def __init__(self, tool: str, message: str, *, uri: str) -> None:
        super().__init__(tool, message)
        self.uri = uri


class SchemaDerivationError(RegistrationError):
    """A typed tool's signature cannot be turned into a JSON Schema.

    `parameter` names the parameter at fault ("return" for the return annotation), or is
    None when the problem is the function as a whole.
    """

    def __init__(self, tool: str, message: str, *, parameter: str | None = None) -> None:
        super().__init__(tool, message)
        self.parameter = parameter


class UnsupportedAnnotationError(Exception):
    """An annotation has no JSON Schema; `member` is the outermost property it sits in (a
    parameter's name). Deriving a typed tool's schema turns it into SchemaDerivationError."""

    def __init__(self, message: str, member: str | None = None) -> None:
        super().__init__(message)
        self.member = member


# --- dispatch ---------------------------------------------------------------


class ToolCallError(MiniHarnessError):
    """A dispatch ended in ToolFailed; the failure was recorded before this was raised,
    with the call's `call_id` and `duration_ms` (None until it is recorded)."""

    kind: str = "handler_error"
    exit_code = ExitCode.FAILED

    def __init__(self, tool: str, message: str, *, call_id: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.call_id = call_id
        self.duration_ms: float | None = None


class UnknownToolError(ToolCallError):
    """No tool of that name is registered."""

    kind = "unknown_tool"


class InvalidInputError(ToolCallError):
    """The input does not match the tool's schema; `violations` lists every problem."""

    kind = "invalid_input"

    def __init__(
        self, tool: str, message: str, *, path: str, violations: Sequence[Violation] = ()
    ) -> None:
        super().__init__(tool, message)
        self.path = path
        self.violations = tuple(violations)


class RejectedInputError(InvalidInputError):
    """A typed tool's classes refused input its schema allows (an attrs validator said no)."""


class ToolHandlerError(ToolCallError):
    """The handler raised; `error_type` is the exception's class name."""

    kind = "handler_error"

    def __init__(self, tool: str, message: str, *, error_type: str) -> None:
        super().__init__(tool, message)
        self.error_type = error_type


class ToolTimeoutError(ToolCallError):
    """The handler did not finish within the tool's timeout."""

    kind = "timeout"


class ToolCancelledError(ToolCallError):
    """The call was cancelled (task cancellation or Ctrl-C) before the handler finished."""

    kind = "cancelled"


class ToolDeniedError(ToolCallError):
    """The approval policy or the user refused the call; it never ran."""

    kind = "denied"


class PolicyError(MiniHarnessError):
    """An approval policy file or flag cannot be used; `source` says which."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(message)
        self.source = source


class InvalidOutputError(ToolCallError):
    """The handler returned something that is not a JSON value, or a value its tool's
    outputSchema refuses."""

    kind = "invalid_output"


class HandlerTimeoutError(Exception):
    """A handler run in the handler threads, or on an event loop of its own, ran past its
    timeout; dispatch records it as ToolTimeoutError."""


# --- transcripts ------------------------------------------------------------


class TranscriptError(MiniHarnessError):
    """A transcript could not be read or written."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class TranscriptCorruptError(TranscriptError):
    """A line in the middle of a transcript cannot be decoded; good lines follow it."""

    def __init__(self, path: str, message: str, *, line: int, offset: int) -> None:
        super().__init__(path, message)
        self.line = line
        self.offset = offset


class TranscriptFormatError(TranscriptError):
    """The file is not a mini-harness transcript, or is of a format version we cannot read."""


class TranscriptWriteError(TranscriptError):
    """Appending failed; the log was cut back to its last whole line, or marked unusable."""


class EventTooLargeError(TranscriptWriteError):
    """An event's line is over the writer's size cap and cannot be shrunk: nothing was
    written, and the writer goes on."""


class DecodeError(ValueError):
    """A line is not a valid event; the message says why."""


class FieldError(Exception):
    """A value does not fit its field; `path` is where, relative to the value checked."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


class HeaderError(Exception):
    """Line 1 is not a header readers take: `why`, or its `version` is one they cannot read."""

    def __init__(self, why: str, version: int | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.version = version


class NoteFormatError(MiniHarnessError):
    """A signed note, or a signer or verifier key, that cannot be read as one (exit 2)."""


class SignatureRefusedError(MiniHarnessError):
    """A signed note that does not prove what it says: no signature by a trusted key, or
    one by a trusted key that does not verify; or a head that may not be signed (exit 1)."""

    exit_code = ExitCode.FAILED


class SigningUnavailableError(MiniHarnessError):
    """Signing or checking a signature needs what is not installed (the `cryptography`
    package, `ssh-keygen`); the message says how to install it."""


class RunContinuedError(MiniHarnessError):
    """Run `run_id` was already continued (resumed) by run `by`: a run is continued once."""

    def __init__(self, run_id: str, by: str) -> None:
        super().__init__(
            f"run {run_id} was already resumed by run {by}, and a run is continued only "
            f"once: resume run {by} instead, or branch run {run_id} off with "
            f"`mini-harness fork --run {run_id} --at-step N`"
        )
        self.run_id = run_id
        self.by = by


class RunInProgressError(MiniHarnessError):
    """Run `run_id` is still being written by another process (`changed`: it recorded more
    while its history was read), so it cannot be continued now."""

    def __init__(self, run_id: str, *, changed: bool) -> None:
        what = (
            "recorded more events while its history was being read"
            if changed
            else "is still running in another process"
        )
        super().__init__(
            f"run {run_id} {what}: resume it once that process has ended "
            "(a call still running looks exactly like one in doubt)"
        )
        self.run_id = run_id
        self.changed = changed


class RedactionError(MiniHarnessError):
    """A redaction setting cannot be used (e.g. a pattern that is not a valid regex)."""


# --- workspace tools --------------------------------------------------------


class WorkspaceError(MiniHarnessError):
    """A workspace file tool refused a path or a file; `path` is the path as given."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class FileRefusedError(Exception):
    """A file that may not be read: its `kind` (not a regular file), its `size` (larger
    than allowed) or `outside` (it really is outside the directory)."""

    def __init__(
        self, *, kind: str | None = None, size: int | None = None, outside: bool = False
    ) -> None:
        super().__init__(kind or (f"{size} bytes" if size is not None else "outside"))
        self.kind = kind
        self.size = size
        self.outside = outside


class PatchSyntaxError(MiniHarnessError):
    """The text is not a unified diff apply_patch can use; the message says where."""


class PatchConflictError(WorkspaceError):
    """A patch does not fit the files as they are now (a hunk does not match, a file it
    adds exists, a file changed while the patch was applied); nothing was changed."""


class GitError(WorkspaceError):
    """git could not answer (not a repository, one leading outside the workspace, a
    timeout)."""


class InvalidPatternError(MiniHarnessError):
    """A search pattern is not a valid regular expression."""

    def __init__(self, pattern: str, message: str) -> None:
        super().__init__(message)
        self.pattern = pattern


class SearchDeadlineError(Exception):
    """A regex search's wall-clock deadline passed, inside the regex engine or between
    files: the search's own signal, turned into SearchBudgetError (which says where)
    before anyone sees it."""


class UntranslatableCallError(Exception):
    """An imported call's argument has no equivalent in mini-harness's tools (the message
    says which and why): turned into the reason `replay --rerun` skips the call, before
    anyone sees it."""


class SearchBudgetError(MiniHarnessError):
    """A regex search ran past its wall-clock budget; `pattern`, `budget` (seconds) and
    `path` (the file it was in) say which, where."""

    def __init__(self, message: str, *, pattern: str, budget: float, path: str) -> None:
        super().__init__(message)
        self.pattern = pattern
        self.budget = budget
        self.path = path


# --- agent ------------------------------------------------------------------


class RunStopError(Exception):
    """An agent run stops early: the loop's own signal, never seen outside it. `reason` is
    the stop reason RunFinished records, `error` what went wrong."""

    def __init__(self, reason: str, error: str) -> None:
        super().__init__(reason, error)
        self.reason = reason
        self.error = error


class ModelError(MiniHarnessError):
    """A model request failed; `kind` is one of MODEL_ERROR_KINDS, `status` the HTTP status
    when there was one, `attempt` which attempt (1-based) this was."""

    def __init__(
        self, kind: str, message: str, *, status: int | None = None, attempt: int = 1
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempt = attempt


class ResponseShapeError(Exception):
    """What a model server sent is not what its SDK's types say (the SDKs build their
    objects without checking them); the message says which part. An SDK provider reports
    it as an invalid_response ModelError."""


class ProviderSetupError(MiniHarnessError):
    """The provider cannot be made: a bad `--model`, a missing key or setting, or its SDK
    is not installed (the message then carries the install line)."""


class ScriptError(MiniHarnessError):
    """A script file that cannot be used; the message names the file and what is wrong."""


# --- replay -----------------------------------------------------------------


class ReplayError(MiniHarnessError):
    """Replay could not start: a bad run selection, registry spec or output path."""


class SourceError(MiniHarnessError):
    """Another agent's session file cannot be imported as a whole: unreadable, of no format
    the importer knows, or compressed and no zstd support installed (exit 2)."""


class RayUnavailableError(MiniHarnessError):
    """Ray is not installed, or the cluster cannot be reached."""


class TelemetryError(MiniHarnessError):
    """OpenTelemetry export cannot be done as asked: the `otel` extra is missing, or an
    endpoint or header is malformed (exit 2)."""


class TelemetrySendError(TelemetryError):
    """The collector did not take the spans (unreachable, refused, timed out): exit 1."""

    exit_code: ClassVar[ExitCode] = ExitCode.FAILED


class ResumeError(MiniHarnessError):
    """A run cannot be continued as asked; the message says why."""


class OutputError(Exception):
    """The console script's standard output cannot be written (a full disk, a device error):
    it says so on standard error and exits 1. Not a MiniHarnessError (those are exit 2)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RegistrySpecError(MiniHarnessError):
    """`module:attribute` does not name a ToolRegistry (or a function returning one)."""

    def __init__(self, spec: str, message: str) -> None:
        super().__init__(message)
        self.spec = spec


class UsageError(MiniHarnessError):
    """A command was asked for something it cannot do (exit 2); the message says all there
    is to say, so no hint to `--help` follows it, unlike click's own usage errors."""


# --- MCP ----------------------------------------------------------------------


class GuardError(Exception):
    """A `tools/call` the MCP wire guard runs ends in this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- testing --------------------------------------------------------------------


class NormalizationError(ValueError):
    """The obtained output cannot be normalized (e.g. a transcript line that is not JSON)."""

"""What the two SDK providers (OpenAI, Anthropic) share: the attempts of a request, each
one seen (the SDK's own retries are off, sdk_failures.py has the policy), the response
read back, and the wire form of request parameters and of tool-call arguments.

The SDK is used as it comes: its own HTTP client, which honours the standard proxy
variables (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) as for every other user
of the SDK. What the server sent is checked as it is read (`model`, `listed`, `text`,
`count`): a body of the wrong shape is an `invalid_response`. Only those checks and the
SDK's own exceptions are mapped to model errors: an error in our own code is not mistaken
for the server's.

A model may send tool-call arguments that are not a JSON object (cut off by a token limit,
just malformed, or nested deeper than MAX_JSON_DEPTH). The conversation keeps that raw
text, but several servers (vLLM, llama.cpp, Anthropic's API for `tool_use.input`) refuse
a history whose earlier tool-call arguments are not a JSON object. So such arguments are
sent back wrapped in an object that says what they were; the tool's result (an error,
from the loop) tells the model what went wrong.

This module is imported only by the SDK providers.
"""

from __future__ import annotations

import abc
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import attrs
import orjson
import pydantic

from mini_harness.agent.providers.interface import ModelRequest, ModelResponse
from mini_harness.agent.providers.sdk_failures import FailureMapping, SdkErrors, retry_delay
from mini_harness.errors import MiniHarnessError, ModelError, NotJsonError, ResponseShapeError
from mini_harness.events import JsonObject, Message, ToolCall, Usage, new_id
from mini_harness.events.jsonvalue import decode_json_input
from mini_harness.events.redaction import KeyFinder

UNPARSED_KEY = "unparsedArguments"
"""The key the raw text is wrapped under when it is not a JSON object."""


def _object(raw: str) -> JsonObject | None:
    """`raw` as a JSON object, or None: not JSON, not an object, or out of the bounds of
    every JSON value (events/jsonvalue.py's one decoder: too deep, a wide integer)."""
    try:
        value = decode_json_input(raw)
    except NotJsonError:
        return None
    return value if isinstance(value, dict) else None


def arguments_object(raw: str) -> JsonObject:
    """`raw` as a JSON object: itself when it is one, `{}` when empty, else wrapped."""
    if not raw.strip():
        return {}
    value = _object(raw)
    return {UNPARSED_KEY: raw} if value is None else value


def arguments_text(raw: str) -> str:
    """`raw` as the text of a JSON object: unchanged when it is one, else as above."""
    if _object(raw) is not None:
        return raw
    return orjson.dumps(arguments_object(raw)).decode()


@attrs.frozen
class ModelParams:
    """The request parameters a provider sends, read from their neutral names."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None

    NAMES: ClassVar[tuple[str, ...]] = ("maxTokens", "stop", "temperature", "topP")

    @classmethod
    def of(cls, params: JsonObject) -> ModelParams:
        """The parameters of a request; an unknown name or a value of the wrong type is an
        error before anything is sent."""
        for key in params:
            if key not in cls.NAMES:
                known = ", ".join(cls.NAMES)
                raise MiniHarnessError(f"Unknown model parameter {key!r} (known: {known})")
        return cls(
            temperature=_number(params, "temperature"),
            max_tokens=_tokens(params),
            top_p=_number(params, "topP"),
            stop=_stops(params),
        )


def _number(params: JsonObject, key: str) -> float | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise MiniHarnessError(f"Model parameter {key!r} must be a number")


def _tokens(params: JsonObject) -> int | None:
    value = params.get("maxTokens")
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise MiniHarnessError("Model parameter 'maxTokens' must be a positive integer")


def _stops(params: JsonObject) -> list[str] | None:
    value = params.get("stop")
    if value is None:
        return None
    stops = [value] if isinstance(value, str) else value
    if isinstance(stops, list) and all(isinstance(stop, str) for stop in stops):
        return stops
    raise MiniHarnessError("Model parameter 'stop' must be a string or a list of strings")


ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)


def model(value: object, cls: type[ModelT], what: str) -> ModelT:
    """An object of a response, of the SDK's type `cls`; anything else (text where an
    object should be, an object of another kind) is a malformed response."""
    if not isinstance(value, cls):
        raise ResponseShapeError(f"{what}: expected {cls.__name__}, got {type(value).__name__}")
    return value


def listed(value: object, what: str) -> list[Any]:
    """An array of a response, or [] when absent; anything else is a malformed response."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ResponseShapeError(f"{what}: expected an array, got {type(value).__name__}")
    return value


def text(value: object, what: str = "text") -> str:
    """A text field of a response: a string, or "" when absent; anything else is a
    malformed response."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ResponseShapeError(f"{what}: expected text, got {type(value).__name__}")
    return value


def count(value: object, what: str) -> int | None:
    """A token count of a response: a whole number, or None when absent; anything else is
    a malformed response."""
    if value is None or (type(value) is int and value >= 0):
        return value
    raise ResponseShapeError(f"{what}: expected a whole number, got {value!r:.40}")


@attrs.define
class ResponseParts:
    """A response as it is read, whole or streamed: its text (the pieces not yet passed on
    in `unsent`), its tool calls by position, usage, the response's id, and the finish
    reason as the server named it (`ended` once the server said the response is whole)."""

    text: list[str] = attrs.Factory(list)
    unsent: list[str] = attrs.Factory(list)
    calls: dict[int, dict[str, str]] = attrs.Factory(dict)
    usage: Usage = attrs.Factory(Usage)
    response_id: str | None = None
    finish: str | None = None
    ended: bool = False

    def add_text(self, piece: object) -> None:
        checked = text(piece)
        if checked:
            self.text.append(checked)
            self.unsent.append(checked)

    def pass_text(self, on_text: Callable[[str], None]) -> None:
        """Pass the text read since the last call on to `on_text`, piece by piece."""
        pieces, self.unsent = self.unsent, []
        for piece in pieces:
            on_text(piece)

    def add_call(self, slot: int, call_id: object, name: object, arguments: object = "") -> None:
        self.calls[slot] = {
            "id": text(call_id, "a tool call's id"),
            "name": text(name, "a tool call's name"),
            "arguments": text(arguments, "a tool call's arguments"),
        }

    def call(self, slot: int) -> dict[str, str]:
        """The call at `slot` (`id`, `name`, `arguments`), empty until its parts arrive."""
        return self.calls.setdefault(slot, {"id": "", "name": "", "arguments": ""})

    def response(self, finish_reason: str, empty_arguments: str = "") -> ModelResponse:
        """The whole response. A call the server sent no id for gets one; one without
        arguments gets `empty_arguments`."""
        calls = tuple(
            ToolCall(
                id=c["id"] or f"call_{new_id()}",
                name=c["name"],
                arguments=c["arguments"] or empty_arguments,
            )
            for _, c in sorted(self.calls.items())
        )
        return ModelResponse(
            message=Message("assistant", "".join(self.text), tool_calls=calls),
            finish_reason=finish_reason,
            usage=self.usage,
            response_id=self.response_id,
        )


BodyT = TypeVar("BodyT")
WholeT = TypeVar("WholeT")
EventT = TypeVar("EventT")
RawT = TypeVar("RawT")
T_co = TypeVar("T_co", covariant=True)


class EventStream(Protocol[T_co]):
    """An SDK's stream of response events."""

    def __iter__(self) -> Iterator[T_co]: ...
    def close(self) -> None: ...


class RawResponse(Protocol[T_co]):
    """An SDK's raw response (`with_raw_response`): received, and parsed only when asked."""

    def parse(self) -> T_co: ...


class SdkProvider(abc.ABC, Generic[BodyT, WholeT, EventT]):
    """A model behind an official SDK: each attempt of a request is sent with the SDK's
    retries off, whatever goes wrong is a ModelError (the key redacted), and a failure the
    policy retries is reported to `on_retry` before the next attempt.

    A provider makes its SDK's client (`max_retries=0`), converts a request to its body
    (`_body`, once), sends it for a whole response or a stream (`_send_whole`,
    `_send_stream`: the SDK's raw response, parsed here under the reading guard), and
    reads the parsed response, or each event of the stream, into ResponseParts.
    `max_retries` is how many times a failed attempt is tried again; `timeout` is in
    seconds; `base_url_setting` names where the base URL came from (a 404 says so).
    """

    errors: ClassVar[SdkErrors]  # the SDK's exception classes
    provider_name: ClassVar[str]  # the provider's name is `<provider_name>:<model>`
    empty_arguments: ClassVar[str] = ""  # the arguments of a call sent without any

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
        base_url_setting: str = "the base URL",
    ) -> None:
        self.model = model
        self.name = f"{self.provider_name}:{model}"
        self.max_retries = max_retries
        self.base_url_setting = base_url_setting
        self._api_key = api_key
        self._keys = KeyFinder.of([api_key])
        self._connect(api_key=api_key, base_url=base_url, timeout=timeout)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}(model={self.model!r})>"

    @property
    def secrets(self) -> tuple[str, ...]:
        """What this provider holds that no output may show: its API key."""
        return (self._api_key,)

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        body = self._body(request)
        parts = ResponseParts()
        if on_text is None:
            whole, mapping = self._attempts(lambda: self._send_whole(body), on_retry)
            with _reading(mapping):
                self._read_whole(_parsed(whole), parts)
            return self._response(parts, mapping)
        streamed, mapping = self._attempts(lambda: self._send_stream(body), on_retry)
        try:
            with _reading(mapping):
                stream = _parsed(streamed)
            try:  # the stream is closed however the reading ends (Ctrl-C included)
                for event in _events(stream, mapping):
                    with _reading(mapping):
                        self._read_event(event, parts)
                    parts.pass_text(on_text)
            finally:
                stream.close()
        except self.errors.raised as error:
            raise mapping.reading(error) from None
        return self._response(parts, mapping)

    def _attempts(
        self, send: Callable[[], RawT], on_retry: Callable[[ModelError], None] | None
    ) -> tuple[RawT, FailureMapping]:
        """What `send` returned, at the first attempt that did not fail, and the mapping of
        that attempt's failures; a failure the policy retries is passed to `on_retry`
        before the next attempt, and the last one is raised."""
        attempt = 1
        while True:
            mapping = FailureMapping(self.errors, attempt, self._redact, self.base_url_setting)
            try:
                return send(), mapping
            except self.errors.raised as error:
                failure = mapping.sending(error)
            if not failure.retry or attempt > self.max_retries:
                raise failure.error
            if on_retry is not None:
                on_retry(failure.error)
            time.sleep(retry_delay(failure, attempt - 1))
            attempt += 1

    def _redact(self, text: str) -> str:
        return text if self._keys is None else self._keys.redact(text)

    def _response(self, parts: ResponseParts, mapping: FailureMapping) -> ModelResponse:
        if not parts.ended:
            raise mapping.error(
                "invalid_response",
                "The model server's response stream ended before the response was complete",
            )
        return parts.response(self._finish_reason(parts), self.empty_arguments)

    @abc.abstractmethod
    def _connect(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        """Make the SDK's client, with its retries off."""

    @abc.abstractmethod
    def _body(self, request: ModelRequest) -> BodyT:
        """What is sent for `request`, in the SDK's types."""

    @abc.abstractmethod
    def _send_whole(self, body: BodyT) -> RawResponse[WholeT]:
        """Send `body` for a whole response; the SDK's raw response, its body read."""

    @abc.abstractmethod
    def _send_stream(self, body: BodyT) -> RawResponse[EventStream[EventT]]:
        """Send `body` for a stream; the SDK's raw response, its status and headers read."""

    @abc.abstractmethod
    def _read_whole(self, response: WholeT, parts: ResponseParts) -> None:
        """Read a whole response into `parts`."""

    @abc.abstractmethod
    def _read_event(self, event: EventT, parts: ResponseParts) -> None:
        """Read one event of a stream into `parts`."""

    @abc.abstractmethod
    def _finish_reason(self, parts: ResponseParts) -> str:
        """The neutral finish reason of a response read whole."""


@contextlib.contextmanager
def _reading(mapping: FailureMapping) -> Iterator[None]:
    """Report a response whose reading found it of the wrong shape (ResponseShapeError,
    raised by the checks above and by `_parsed`) as an invalid_response. Nothing else is
    caught: an error of our own code goes on as it is."""
    try:
        yield
    except ResponseShapeError as error:
        raise mapping.unreadable(error) from None


def _parsed(raw: RawResponse[RawT]) -> RawT:
    """What the SDK parses a response body into. A body that is not JSON at all, or nests
    deeper than Python's decoder goes, fails in the SDK's decoder (its own exception
    classes do not cover that): a ResponseShapeError."""
    try:
        return raw.parse()
    except (ValueError, RecursionError) as error:
        raise ResponseShapeError(_undecoded(error)) from None


def _undecoded(error: BaseException) -> str:
    return f"not JSON ({type(error).__name__}: {error})"


def _events(stream: Iterable[EventT], mapping: FailureMapping) -> Iterator[EventT]:
    """The stream's events, each one decoded by the SDK under the reading guard."""
    iterator = iter(stream)
    while True:
        with _reading(mapping):
            try:
                event = next(iterator)
            except StopIteration:
                return
            except (ValueError, RecursionError) as error:  # the SDK's decoder, as `_parsed`
                raise ResponseShapeError(_undecoded(error)) from None
        yield event

"""What the two SDK providers (OpenAI, Anthropic) share: the request path with every HTTP
attempt observed, failures mapped to ModelError, the response read back, and the wire form
of request parameters and of tool-call arguments.

The official SDKs retry rate limits, server errors and timeouts themselves. To record each
failed attempt, the providers hand the SDK an httpx2 client whose transport notes how every
attempt ended. A failure is reported through `on_retry` when the SDK sends the next attempt
(so only failures that were retried are reported, and the SDK's own retry rules stay the
only ones); the failure the SDK finally raises becomes the ModelError the provider raises.

A model may send tool-call arguments that are not a JSON object (cut off by a token limit,
or just malformed). The conversation keeps that raw text, but several servers (vLLM,
llama.cpp, Anthropic's API for `tool_use.input`) refuse a history whose earlier tool-call
arguments are not a JSON object. So such arguments are sent back wrapped in an object that
says what they were; the tool's result (an error, from the loop) tells the model what went
wrong.

httpx2 comes with both SDKs; this module is imported only by their providers.
"""

from __future__ import annotations

import abc
import contextvars
import json
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import httpx2

from mini_harness.agent.provider import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)
from mini_harness.errors import MiniHarnessError
from mini_harness.events import JsonObject, new_id

UNPARSED_KEY = "unparsedArguments"
"""The key the raw text is wrapped under when it is not a JSON object."""


def _object(raw: str) -> JsonObject | None:
    try:
        value = json.loads(raw)
    except ValueError:
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
    return json.dumps(arguments_object(raw), ensure_ascii=False)


def wire_params(params: JsonObject, names: dict[str, str]) -> dict[str, Any]:
    """The request parameters under the wire format's names; an unknown one is an error."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in names:
            known = ", ".join(sorted(names))
            raise MiniHarnessError(f"Unknown model parameter {key!r} (known: {known})")
        out[names[key]] = value
    return out


REDACTED = "[redacted]"
_STATUS_KINDS = {429: "rate_limited", 401: "auth", 403: "auth", 408: "timeout"}


def server_error_message(body: bytes) -> str | None:
    """The error message a server put in its JSON error body, in either wire format:
    `{"error": {"message": ...}}` (OpenAI, Anthropic) or `{"message": ...}`."""
    try:
        data = json.loads(body)
    except ValueError:
        text = body.decode("utf-8", "replace").strip()
        return text[:500] or None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return None


def _detail(error: BaseException) -> str:
    return str(error) or type(error).__name__


@attrs.define
class AttemptLog:
    """The attempts of one `complete` call: how many were sent and how the last one failed.

    It words each failure as a ModelError of the latest attempt, with every occurrence
    of `secret` (the API key) redacted.
    """

    secret: str | None
    on_retry: Callable[[ModelError], None] | None
    attempts: int = 0
    last_failure: ModelError | None = None

    def starting(self) -> None:
        """A new attempt is being sent: the previous one's failure was retried."""
        if self.last_failure is not None and self.on_retry is not None:
            self.on_retry(self.last_failure)
        self.last_failure = None
        self.attempts += 1

    def failure(self, kind: str, message: str, status: int | None = None) -> ModelError:
        """A ModelError of the latest attempt, the key redacted."""
        if self.secret and len(self.secret) >= 4:
            message = message.replace(self.secret, REDACTED)
        return ModelError(kind, message, status=status, attempt=max(self.attempts, 1))

    def status_error(self, status: int, body: bytes) -> ModelError:
        """An HTTP error status, with the server's message when it gave one."""
        message = f"Model request failed with HTTP {status}"
        detail = server_error_message(body)
        if detail:
            message = f"{message}: {detail}"
        return self.failure(_STATUS_KINDS.get(status, "http_error"), message, status)

    def transport_error(self, error: Exception) -> ModelError:
        """An attempt that got no response (timeout, refused, reset)."""
        if isinstance(error, httpx2.TimeoutException):
            return self.failure("timeout", f"Model request timed out ({type(error).__name__})")
        return self.failure("http_error", f"Could not reach the model server: {_detail(error)}")

    def stream_error(self, error: BaseException) -> ModelError:
        """A response stream that broke after it started."""
        if isinstance(error, httpx2.TimeoutException):
            message = "The model server stopped sending mid-response (read timed out)"
            return self.failure("timeout", message)
        message = f"The model server's response stream was cut off: {_detail(error)}"
        return self.failure("invalid_response", message)

    def final_failure(self, error: Exception) -> ModelError:
        """The ModelError to raise for `error`, which the SDK (or its stream) raised.

        A failed attempt the transport saw is reported as it was seen (status, the server's
        message); otherwise the response broke after it started, or could not be used.
        """
        if self.last_failure is not None:
            return self.last_failure
        # The SDKs wrap a stream that broke in their own connection/timeout errors.
        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, httpx2.TransportError | httpx2.StreamError):
                return self.stream_error(cause)
            cause = cause.__cause__ or cause.__context__
        detail = str(getattr(error, "message", "") or error)
        body = getattr(error, "body", None)
        if body is not None:
            # An error event inside a stream that had started well.
            detail = server_error_message(json.dumps(body).encode()) or detail
            return self.failure("http_error", f"The model server reported an error: {detail}")
        detail = detail or type(error).__name__
        return self.failure(
            "invalid_response", f"The model server's response could not be read: {detail}"
        )


_CURRENT: contextvars.ContextVar[AttemptLog] = contextvars.ContextVar("mini_harness_attempt_log")
"""The AttemptLog of the `complete` call under way (set for its duration)."""


def invalid_response(message: str) -> ModelError:
    """An `invalid_response` ModelError for the current attempt."""
    return _CURRENT.get().failure("invalid_response", message)


class ObservingTransport(httpx2.BaseTransport):
    """An httpx2 transport that notes how each attempt ended in the current AttemptLog."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        log = _CURRENT.get()
        log.starting()
        try:
            response = self._inner.handle_request(request)
        except httpx2.TransportError as error:
            log.last_failure = log.transport_error(error)
            raise
        if response.status_code >= 400:
            # Error bodies are small; reading them here keeps the server's message for an
            # attempt the SDK retries without reading (the SDK reads the buffered copy).
            try:
                body = response.read()
            except httpx2.TransportError as error:
                log.last_failure = log.stream_error(error)
                raise
            log.last_failure = log.status_error(response.status_code, body)
            return response
        response.stream = _ObservedBody(response.stream, log)
        return response

    def close(self) -> None:
        self._inner.close()


class _ObservedBody(httpx2.SyncByteStream):
    """A response body that notes in the AttemptLog when it breaks off (a body cut short,
    a read timeout), whether the SDK then retries (a whole body) or raises (a stream)."""

    def __init__(self, inner: httpx2.SyncByteStream | Any, log: AttemptLog) -> None:
        self._inner = inner
        self._log = log
        self._attempt = log.attempts

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._inner
        except httpx2.TransportError as error:
            if self._log.attempts == self._attempt:
                self._log.last_failure = self._log.stream_error(error)
            raise

    def close(self) -> None:
        self._inner.close()


def checked_text(value: object) -> str:
    """A text field of a response: a string, or "" when absent; anything else is a
    malformed response (raised as a ValueError, which becomes invalid_response)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {type(value).__name__}")  # noqa: TRY004
    return value


@attrs.define
class ResponseParts:
    """A response as it is read, whole or streamed: its text (each piece passed to
    `on_text` as it arrives), its tool calls by position, usage and the response's id."""

    on_text: Callable[[str], None] | None = None
    text: list[str] = attrs.Factory(list)
    calls: dict[int, dict[str, str]] = attrs.Factory(dict)
    usage: Usage = attrs.Factory(Usage)
    response_id: str | None = None

    def add_text(self, piece: object) -> None:
        text = checked_text(piece)
        if text:
            self.text.append(text)
            if self.on_text is not None:
                self.on_text(text)

    def add_call(self, slot: int, call_id: object, name: object, arguments: object = "") -> None:
        self.calls[slot] = {
            "id": checked_text(call_id),
            "name": checked_text(name),
            "arguments": checked_text(arguments),
        }

    def call(self, slot: int) -> dict[str, str]:
        """The call at `slot` (`id`, `name`, `arguments`), empty until its parts arrive."""
        return self.calls.setdefault(slot, {"id": "", "name": "", "arguments": ""})

    def response(self, finish_reason: str | None, empty_arguments: str = "") -> ModelResponse:
        """The whole response; a finish reason of None means the stream ended early.

        A call the server sent no id for gets one; one without arguments gets
        `empty_arguments`.
        """
        if finish_reason is None:
            raise invalid_response(
                "The model server's response stream ended before the response was complete"
            )
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


class SdkProvider(abc.ABC):
    """A model behind an official SDK: the request is sent with each attempt observed,
    and whatever goes wrong is raised as ModelError with the key redacted.

    A provider makes its SDK's client and gives its create function (`_connect`),
    converts the request to that function's arguments and reads a whole response or a
    stream into ResponseParts. The SDK retries up to `max_retries` times; `timeout` is
    in seconds.
    """

    sdk_error: ClassVar[type[Exception]]  # the root of the SDK's exceptions
    stream_arguments: ClassVar[dict[str, Any]]  # what asks `create` for a stream
    provider_name: ClassVar[str]  # the provider's name is `<provider_name>:<model>`

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
    ) -> None:
        self.model = model
        self.name = f"{self.provider_name}:{model}"
        self._api_key = api_key
        # Proxy variables are not read (a proxy transport would bypass the observation).
        http_client = httpx2.Client(
            transport=ObservingTransport(httpx2.HTTPTransport()),
            timeout=timeout,
            follow_redirects=True,
            trust_env=False,
        )
        self._create = self._connect(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__}(model={self.model!r})>"

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        kwargs = self._arguments(request)
        log = AttemptLog(secret=self._api_key, on_retry=on_retry)
        token = _CURRENT.set(log)  # the transport notes each attempt of this call in it
        try:
            if on_text is None:
                return self._read(self._create(**kwargs), ResponseParts())
            # The stream is closed however the reading ends (Ctrl-C included).
            with self._create(**kwargs, **self.stream_arguments) as stream:
                return self._read_stream(stream, ResponseParts(on_text))
        except (self.sdk_error, httpx2.HTTPError, httpx2.StreamError) as error:
            raise log.final_failure(error) from None
        except (AttributeError, TypeError, KeyError, ValueError) as error:
            # The SDKs do not validate bodies: a 200 that is not a response (a proxy's
            # HTML page, a body of the wrong shape) fails while being read.
            message = "The model server's response is not in the expected format"
            raise log.failure("invalid_response", f"{message} ({_detail(error)})") from None
        finally:
            _CURRENT.reset(token)

    @abc.abstractmethod
    def _connect(self, **settings: Any) -> Callable[..., Any]:
        """The SDK's create function, of a client made with these settings."""

    @abc.abstractmethod
    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK's arguments for `request`."""

    @abc.abstractmethod
    def _read(self, wire: Any, parts: ResponseParts) -> ModelResponse:
        """The response from the SDK's response object."""

    @abc.abstractmethod
    def _read_stream(self, stream: Any, parts: ResponseParts) -> ModelResponse:
        """The response from the SDK's stream, each text piece passed on as it comes."""

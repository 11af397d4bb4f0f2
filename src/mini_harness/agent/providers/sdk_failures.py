"""How an attempt of an SDK provider failed, in one place: the SDKs' own exception classes
mapped to ModelError kinds, and whether the attempt is tried again, and when.

The providers turn their SDK's retries off (`max_retries=0`) and run this policy
themselves, so that every attempt is seen and recorded. The policy is the SDKs' own:
a rate limit (429), a timeout (408 or none in time), a lock conflict (409), a server error
(5xx) or a connection that failed is tried again; the server's `retry-after-ms` or
`retry-after` (seconds or a date) is honoured up to MAX_RETRY_AFTER seconds (a longer one
is not waited for: the failure is final), else the wait doubles from INITIAL_DELAY up to
MAX_DELAY, less up to a quarter at random; an `x-should-retry` header decides over the rest.

A response that broke after it started streaming is never tried again: its text was shown.

httpx2 is the SDKs' HTTP client: its exception classes say how a connection failed.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from types import ModuleType
from typing import Protocol, cast

import attrs
import httpx2

from mini_harness.errors import ModelError

INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
_RETRIED_STATUSES = frozenset({408, 409, 429})
_NOT_REACHED = (httpx2.ConnectError, httpx2.ProxyError, httpx2.UnsupportedProtocol)


class _StatusError(Protocol):
    """What both SDKs' APIStatusError carry."""

    status_code: int
    body: object
    response: httpx2.Response


@attrs.frozen
class SdkErrors:
    """An SDK's exception classes, as the mapping tells them apart (both SDKs have them)."""

    root: type[Exception]  # every exception the SDK raises (OpenAIError, AnthropicError)
    api: type[Exception]  # APIError: the server reported one (its `body`)
    status: type[Exception]  # APIStatusError: an error status
    connection: type[Exception]  # APIConnectionError: no usable response
    timeout: type[Exception]  # APITimeoutError (an APIConnectionError)
    rate_limit: type[Exception]  # RateLimitError
    auth: tuple[type[Exception], ...]  # AuthenticationError, PermissionDeniedError

    @classmethod
    def of(cls, sdk: ModuleType, root: type[Exception]) -> SdkErrors:
        """The exception classes of an SDK's module (both SDKs name them alike), `root`
        the one every other derives from."""
        auth = (sdk.AuthenticationError, sdk.PermissionDeniedError)
        return cls(
            root,
            sdk.APIError,
            sdk.APIStatusError,
            sdk.APIConnectionError,
            sdk.APITimeoutError,
            sdk.RateLimitError,
            auth,
        )

    @property
    def raised(self) -> tuple[type[Exception], ...]:
        """What a request or a stream may raise for a failure of the server or the network:
        the SDK's exceptions and, where the SDK lets them through, its HTTP client's."""
        return (self.root, httpx2.RequestError, httpx2.StreamError)


@attrs.frozen
class Failure:
    """A failed attempt: its ModelError, whether the policy tries again, and how long the
    server asked to wait first (seconds, None when it did not say)."""

    error: ModelError
    retry: bool = False
    retry_after: float | None = None


def server_error_message(body: object) -> str | None:
    """The message a server put in its error body, in either wire format:
    `{"error": {"message": ...}}` (OpenAI, Anthropic), `{"message": ...}`, or plain text."""
    if isinstance(body, str):
        return body.strip()[:500] or None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return None


def _http_cause(error: BaseException) -> BaseException | None:
    """The HTTP client's exception behind `error` (itself, or one it was raised from)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, httpx2.RequestError | httpx2.StreamError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _detail(error: BaseException | None) -> str:
    return "" if error is None else str(error) or type(error).__name__


def _seconds(value: str | None, divisor: float = 1.0) -> float | None:
    """A retry-after header's wait in seconds: a number, or (seconds only) a date."""
    if value is None:
        return None
    try:
        return float(value) / divisor
    except ValueError:
        pass
    if divisor != 1.0:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, IndexError):
        return None


def _tried_url(raised: _StatusError) -> str | None:
    """The URL the failed request went to (without its query)."""
    try:
        url = raised.response.request.url
    except (AttributeError, RuntimeError):  # a response built without its request
        return None
    return str(url.copy_with(query=None, fragment=None))


def base_url_hint(url: str, setting: str) -> str:
    """What a 404 at `url` most likely means, when the base URL is the cause.

    The SDKs append their own path to the base URL: `/chat/completions` (an OpenAI-style
    server serves it under `/v1`, so the base URL must end in `/v1`), `/v1/messages`
    (Anthropic's: the base URL must not end in `/v1`)."""
    path = httpx2.URL(url).path
    root = url[: len(url) - len(path)] if path and url.endswith(path) else url
    if "/v1/v1/" in path:
        fixed = root + path[: path.index("/v1/v1/")]
        return f"the SDK adds /v1 itself: set {setting} without it ({fixed})"
    if path.endswith("/chat/completions") and "/v1/" not in path:
        fixed = root + path.removesuffix("/chat/completions") + "/v1"
        return f"OpenAI-style servers answer under /v1: set {setting} to {fixed}"
    return f"check {setting}"


@attrs.frozen
class FailureMapping:
    """Turns what an SDK raised during attempt `attempt` into a Failure, each message
    passed through `redact` (which hides the provider's key). `setting` names where the
    base URL came from, for a 404's hint."""

    errors: SdkErrors
    attempt: int
    redact: Callable[[str], str]
    setting: str = "the base URL"

    def error(self, kind: str, message: str, status: int | None = None) -> ModelError:
        return ModelError(kind, self.redact(message), status=status, attempt=self.attempt)

    def sending(self, raised: Exception) -> Failure:
        """A failure raised while a request was sent and its response (a whole body, or a
        stream's status and headers) was received."""
        errors = self.errors
        if isinstance(raised, errors.status):
            status_error = cast(_StatusError, raised)
            if status_error.status_code >= 400:
                return self._status(status_error, raised)
        cause = _http_cause(raised)
        if isinstance(raised, errors.timeout) or isinstance(cause, httpx2.TimeoutException):
            name = type(cause).__name__ if cause is not None else type(raised).__name__
            return Failure(self.error("timeout", f"Model request timed out ({name})"), retry=True)
        if isinstance(raised, errors.connection) or cause is not None:
            if cause is None or isinstance(cause, _NOT_REACHED):
                message = f"Could not reach the model server: {_detail(cause or raised)}"
                return Failure(self.error("http_error", message), retry=True)
            message = f"The model server's response was cut off: {_detail(cause)}"
            return Failure(self.error("invalid_response", message), retry=True)
        return Failure(self.reading(raised))

    def reading(self, raised: Exception) -> ModelError:
        """A failure raised while a response that had started was read (never retried)."""
        cause = _http_cause(raised)
        if isinstance(raised, self.errors.timeout) or isinstance(cause, httpx2.TimeoutException):
            message = "The model server stopped sending mid-response (read timed out)"
            return self.error("timeout", message)
        if isinstance(raised, self.errors.connection) or cause is not None:
            message = f"The model server's response stream was cut off: {_detail(cause)}"
            return self.error("invalid_response", message)
        if isinstance(raised, self.errors.api):
            # An error event in a stream that had started well.
            body = cast(_StatusError, raised).body
            detail = server_error_message(body) or _detail(raised)
            return self.error("http_error", f"The model server reported an error: {detail}")
        message = f"The model server's response could not be read: {_detail(raised)}"
        return self.error("invalid_response", message)

    def unreadable(self, raised: Exception) -> ModelError:
        """A response whose content could not be parsed (a proxy's page, a body of the
        wrong shape, JSON nested past what Python reads)."""
        message = "The model server's response is not in the expected format"
        return self.error("invalid_response", f"{message} ({_detail(raised)})")

    def _status(self, raised: _StatusError, error: Exception) -> Failure:
        status = raised.status_code
        message = f"Model request failed with HTTP {status}"
        detail = server_error_message(raised.body)
        url = _tried_url(raised) if status == 404 else None
        if url is not None:  # most often a base URL that misses, or repeats, /v1
            message = f"{message} from {url}"
        if detail:
            message = f"{message}: {detail}"
        if url is not None:
            message = f"{message} ({base_url_hint(url, self.setting)})"
        if isinstance(error, self.errors.rate_limit):
            kind = "rate_limited"
        elif isinstance(error, self.errors.auth):
            kind = "auth"
        else:
            kind = "timeout" if status == 408 else "http_error"
        headers = raised.response.headers
        after = _seconds(headers.get("retry-after-ms"), 1000.0)
        if after is None:
            after = _seconds(headers.get("retry-after"))
        verdict = headers.get("x-should-retry")
        if verdict in {"true", "false"}:
            retry = verdict == "true"
        else:
            retry = status in _RETRIED_STATUSES or status >= 500
        if after is not None and math.isfinite(after) and after > MAX_RETRY_AFTER:
            retry = False  # not worth waiting for: the failure is final
        return Failure(self.error(kind, message, status), retry=retry, retry_after=after)


def retry_delay(failure: Failure, retries_done: int) -> float:
    """Seconds to wait before trying again after `retries_done` retries."""
    after = failure.retry_after
    if after is not None and math.isfinite(after) and 0 < after <= MAX_RETRY_AFTER:
        return after
    backoff = min(INITIAL_DELAY * 2.0 ** min(retries_done, 32), MAX_DELAY)
    return backoff * (1 - 0.25 * random.random())  # noqa: S311 - jitter, not a secret

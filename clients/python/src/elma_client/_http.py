"""One HTTP exchange with ELMA over the standard library, with problem+json errors and polite retries."""

import email.utils
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Mapping, Optional, Tuple, Union

from .errors import ElmaConnectionError, ElmaError

__version__ = "0.2.0"

#: Statuses worth retrying when the server says when (``Retry-After``): overload (503) and rate quotas (429).
RETRY_STATUSES = (429, 503)

Query = Mapping[str, Union[str, int, None]]
#: Called before each retry with the error that caused it, the attempt number (1-based) and the wait in seconds.
RetryHook = Callable[[ElmaError, int, float], None]


class Transport:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
        on_retry: Optional[RetryHook] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("url must be an http:// or https:// address, e.g. http://127.0.0.1:8080")
        if not token or any(c.isspace() for c in token):
            raise ValueError("token must be a non-empty bearer token without spaces (mint one with `elma token`)")
        self.base = url.rstrip("/")
        # The address as errors show it: no user name or password that a URL may carry.
        netloc = parsed.hostname + (f":{parsed.port}" if parsed.port else "")
        self.address = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path.rstrip("/"), "", ""))
        self._token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.on_retry = on_retry
        self._sleep = sleep

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Query] = None,
        body: Any = None,
        raw_body: Optional[bytes] = None,
        idempotent: bool,
        accept: str = "application/json",
    ) -> Tuple[int, bytes]:
        """Sends one request (again after ``Retry-After`` when it is idempotent and the server asks to retry);
        returns status and body of a 2xx, raises ElmaError otherwise."""
        attempt = 0
        while True:
            try:
                return self._once(method, path, query, body, raw_body, accept)
            except ElmaError as error:
                wait = error.retry_after
                retryable = idempotent and error.status in RETRY_STATUSES and wait is not None
                if not retryable or attempt >= self.max_retries or wait is None or wait > self.max_retry_wait:
                    raise
                attempt += 1
                if self.on_retry is not None:
                    self.on_retry(error, attempt, wait)
                self._sleep(wait)

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        _, data = self.call(method, path, **kwargs)
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ElmaError(None, "CLIENT.BAD_RESPONSE", "bad response", f"{method} {path}: the answer is not JSON") from None

    def _once(
        self, method: str, path: str, query: Optional[Query], body: Any, raw_body: Optional[bytes], accept: str
    ) -> Tuple[int, bytes]:
        url = self.base + path
        params = [(k, str(v)) for k, v in (query or {}).items() if v is not None]
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"authorization": f"Bearer {self._token}", "accept": accept, "user-agent": f"elma-client-python/{__version__}"}
        data = raw_body
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if data is not None:
            headers["content-type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as response:
            with response:
                raise self._problem(response.code, response.headers, response.read()) from None
        except (socket.timeout, TimeoutError):
            raise ElmaConnectionError(
                None, "CLIENT.TIMEOUT", "timeout", f"ELMA at {self.address} did not answer {method} {path} within {self.timeout:g} s"
            ) from None
        except (urllib.error.URLError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise ElmaConnectionError(
                    None, "CLIENT.TIMEOUT", "timeout", f"ELMA at {self.address} did not answer {method} {path} within {self.timeout:g} s"
                ) from None
            raise ElmaConnectionError(
                None, "CLIENT.UNREACHABLE", "unreachable", f"could not reach ELMA at {self.address}: {self._scrub(str(reason))}"
            ) from None

    def _problem(self, status: int, headers: Any, data: bytes) -> ElmaError:
        retry_after = parse_retry_after(headers.get("retry-after"))
        try:
            problem = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            problem = None
        if not isinstance(problem, dict):
            # Not ELMA's answer (a proxy's page, say): the status is all there is to go on.
            return ElmaError(status, f"HTTP.{status}", "", f"the answer from {self.address} is not a problem document", retry_after=retry_after)
        for field in ("title", "detail"):
            if isinstance(problem.get(field), str):
                problem[field] = self._scrub(problem[field])
        return ElmaError.from_problem(status, problem, retry_after)

    def _scrub(self, text: str) -> str:
        # ELMA never echoes a token; this keeps it so should anything between here and there do so.
        return text.replace(self._token, "[token]")


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110, section 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def quote(segment: str) -> str:
    """A path segment: every character outside the unreserved set percent-encoded, slashes included."""
    if not isinstance(segment, str) or not segment:
        raise ValueError("an id is a non-empty string")
    return urllib.parse.quote(segment, safe="")



"""Errors the client raises: ELMA's RFC 9457 problem documents, and failures to reach it."""

from typing import Any, List, Mapping, Optional


class ElmaError(Exception):
    """An RFC 9457 problem ELMA answered with (``status``, stable ``code`` such as ``MEMORY.NOT_FOUND``,
    ``title``, ``detail``, ``request_id``), or a failure of the exchange itself (``status`` None, codes
    ``CLIENT.UNREACHABLE``, ``CLIENT.TIMEOUT``, ``CLIENT.BAD_RESPONSE``).

    The message names the status, the code, the detail and the request id (quote it to an operator: ELMA's log
    line for the request carries it). It never holds the caller's token or a request body.
    """

    def __init__(
        self,
        status: Optional[int],
        code: str,
        title: str,
        detail: str,
        *,
        request_id: Optional[str] = None,
        type: Optional[str] = None,
        instance: Optional[str] = None,
        errors: Optional[List[Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.type = type
        self.instance = instance
        #: Validation issues (``path`` and ``message``) of a 422, or secret findings.
        self.errors: List[Any] = list(errors or [])
        #: Seconds the server asked the client to wait (``Retry-After``), if it said.
        self.retry_after = retry_after
        super().__init__(self._message())

    def _message(self) -> str:
        head = f"{self.status} {self.code}" if self.status is not None else self.code
        text = f"{head}: {self.detail}" if self.detail else head
        return f"{text} (request {self.request_id})" if self.request_id else text

    @classmethod
    def from_problem(cls, status: int, problem: Mapping[str, Any], retry_after: Optional[float]) -> "ElmaError":
        code = problem.get("code")
        return cls(
            status,
            code if isinstance(code, str) and code else f"HTTP.{status}",
            _text(problem.get("title")),
            _text(problem.get("detail")),
            request_id=_text(problem.get("requestId")) or None,
            type=_text(problem.get("type")) or None,
            instance=_text(problem.get("instance")) or None,
            errors=problem.get("errors") if isinstance(problem.get("errors"), list) else None,
            retry_after=retry_after,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._message()!r})"


class ElmaConnectionError(ElmaError):
    """ELMA could not be reached, or did not answer in time; the message names the address tried."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

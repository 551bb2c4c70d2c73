"""``Elma``: a synchronous client for ELMA's REST API (``/v1``)."""

import os
import time
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union, cast

from . import operations as ops
from . import types as t
from ._http import RetryHook, Transport, quote
from .operations import Operation

#: Erasure statuses that end a ``wait_for_erasure``: everything but running.
_SETTLED = frozenset({"awaiting_approval", "completed", "denied", "approval_timed_out", "verification_failed", "failed"})

Time = Union[str, datetime]


class Elma:
    """A client for one ELMA and one caller (its bearer token carries tenant, subject, roles and purposes).

    ``purpose`` is the default purpose of reads (``recall``, ``get``) when a call names none. Idempotent calls
    (reads, recall, and ``remember`` when every event has an idempotency key or a source id) are sent again
    after a 503 or 429 that says when (``Retry-After``), up to ``max_retries`` times and for waits of at most
    ``max_retry_wait`` seconds; ``on_retry(error, attempt, wait)`` hears of each retry. Errors are ``ElmaError``.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        purpose: Optional[str] = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 30.0,
        on_retry: Optional[RetryHook] = None,
    ) -> None:
        self._http = Transport(url, token, timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait, on_retry=on_retry)
        self.purpose = purpose

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None, **options: Any) -> "Elma":
        """A client configured as the ``elma`` CLI is: ``ELMA_URL`` (default ``http://127.0.0.1:$ELMA_PORT``,
        port 8080), ``ELMA_TOKEN``, and ``ELMA_PURPOSE`` for the default purpose."""
        env = os.environ if env is None else env
        url = env.get("ELMA_URL") or f"http://127.0.0.1:{env.get('ELMA_PORT') or '8080'}"
        token = env.get("ELMA_TOKEN")
        if not token:
            raise ValueError("no token: set ELMA_TOKEN (mint one with `elma token`)")
        options.setdefault("purpose", env.get("ELMA_PURPOSE") or None)
        return cls(url, token, **options)

    @property
    def url(self) -> str:
        """The address of the ELMA this client talks to."""
        return self._http.address

    # Writing

    def remember(
        self,
        text: str,
        *,
        subject: str,
        fact: Optional[t.Fact] = None,
        activity: str = "chat.turn",
        occurred_at: Optional[Time] = None,
        source: str = "agent",
        external_id: Optional[str] = None,
        channel: Optional[str] = None,
        purposes: Optional[Sequence[str]] = None,
        sensitivity: Optional[t.Sensitivity] = None,
        retention: Optional[t.RetentionClass] = None,
        project: Optional[str] = None,
        session: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> t.RememberResult:
        """Records one event about ``subject`` (what was said or done, ``occurred_at`` now unless given).

        ELMA derives an episodic memory from it (``mem_ep_<event id>``), and a semantic one from a ``fact``
        (``mem_se_<event id>``). Sending the same event again (same ``external_id`` or ``idempotency_key``, and the
        same content and ``occurred_at``: give it, the default is the time of the call) is a no-op answered with
        ``duplicate: True``; the same key with other content is ``409 MEMORY.ALREADY_RECORDED``.
        """
        content: t.MemoryContent = {"text": text}
        if fact is not None:
            content["fact"] = fact
        event: t.EventInput = {
            "subject": subject,
            "occurredAt": _iso(occurred_at) if occurred_at is not None else _now(),
            "activity": activity,
            "content": content,
            "source": _source(source, external_id, channel),
        }
        _put(event, "purposes", list(purposes) if purposes is not None else None)
        _put(event, "sensitivity", sensitivity)
        _put(event, "retention", retention)
        _put(event, "project", project)
        _put(event, "session", session)
        _put(event, "idempotencyKey", idempotency_key)
        return self.remember_events([event])

    def remember_events(self, events: Sequence[t.EventInput]) -> t.RememberResult:
        """Records up to 1,000 events in one request, all or nothing (see ``POST /v1/events``)."""
        if not events:
            raise ValueError("remember_events needs at least one event")
        batch: t.IngestBatch = {"events": list(events)}
        # The server deduplicates events by source id or idempotency key, so such a batch may be sent again.
        keyed = all(e.get("idempotencyKey") or e.get("source", {}).get("externalId") for e in events)
        return cast(t.RememberResult, self._call(ops.REMEMBER, body=batch, idempotent=keyed))

    def write_memory(
        self,
        text: str,
        *,
        source_event_ids: Sequence[str],
        kind: t.MemoryKind = "semantic",
        fact: Optional[t.Fact] = None,
        subject: Optional[str] = None,
        purposes: Optional[Sequence[str]] = None,
        confidence: Optional[float] = None,
        idempotency_key: Optional[str] = None,
        session: Optional[str] = None,
    ) -> t.WriteMemoryResult:
        """Records an explicit memory learnt from the events it cites (it inherits their taint and at least
        their sensitivity). A working memory (``kind="working"``) names its ``session``."""
        content: t.MemoryContent = {"text": text}
        if fact is not None:
            content["fact"] = fact
        body: t.WriteMemoryRequest = {"kind": kind, "content": content, "sourceEventIds": list(source_event_ids)}
        _put(body, "subject", subject)
        _put(body, "purposes", list(purposes) if purposes is not None else None)
        _put(body, "confidence", confidence)
        _put(body, "idempotencyKey", idempotency_key)
        _put(body, "session", session)
        return cast(t.WriteMemoryResult, self._call(ops.WRITE_MEMORY, body=body, idempotent=idempotency_key is not None))

    # Reading

    def recall(
        self,
        query: str,
        *,
        purpose: Optional[str] = None,
        budget_tokens: Optional[int] = None,
        filter: Optional[t.RecallFilter] = None,
        kinds: Optional[Sequence[t.MemoryKind]] = None,
        as_of: Optional[Time] = None,
        known_as_of: Optional[Time] = None,
        consistency: Optional[str] = None,
        after_position: Optional[str] = None,
        session: Optional[str] = None,
        hops: Optional[int] = None,
    ) -> t.RecallResult:
        """A policy-checked, budgeted, cited context pack for ``query`` (Chinese, English and other languages).

        ``consistency="strong"`` waits until ELMA has applied this caller's last write (or ``after_position``,
        a position a write returned). ``as_of`` asks what was valid then, ``known_as_of`` what was known then.
        ``filter`` narrows the recall (a dict with the API's keys, see ``RecallFilter``); ``kinds`` is deprecated in
        favour of ``filter["kinds"]``.
        The answer's ``items`` come best first.
        """
        body: t.RecallRequest = {"query": query, "purpose": self._purpose(purpose, "recall")}
        _put(body, "budgetTokens", budget_tokens)
        _put(body, "filter", filter)
        _put(body, "kinds", list(kinds) if kinds is not None else None)
        _put(body, "asOf", _iso(as_of) if as_of is not None else None)
        _put(body, "knownAsOf", _iso(known_as_of) if known_as_of is not None else None)
        _put(body, "consistency", consistency)
        _put(body, "afterPosition", after_position)
        _put(body, "session", session)
        _put(body, "hops", hops)
        return cast(t.RecallResult, self._call(ops.RECALL, body=body))

    def feedback(self, recall_id: str, adopted: Sequence[str]) -> t.FeedbackResult:
        """Tells ELMA which memories of a recall (by id) the agent used; packing weighs what gets adopted."""
        body: t.FeedbackRequest = {"adopted": list(adopted)}
        return cast(t.FeedbackResult, self._call(ops.FEEDBACK, id=recall_id, body=body))

    def get(self, memory_id: str, *, purpose: Optional[str] = None, session: Optional[str] = None) -> t.Memory:
        """One memory with its provenance and status. Unknown ids and ids the caller may not see (another
        tenant's, another session's working memory) are the same ``404 MEMORY.NOT_FOUND``."""
        query = {"purpose": purpose or self.purpose, "session": session}
        return cast(t.Memory, self._call(ops.GET_MEMORY, id=memory_id, query=query))

    def list_memories(
        self,
        *,
        subject: Optional[str] = None,
        kind: Optional[t.MemoryKind] = None,
        status: Optional[str] = None,
        page_size: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Iterator[t.Memory]:
        """The memories this caller may see, page after page as the iteration goes on (``page_size`` per
        request, ELMA's default when None). ``cursor`` resumes where a page's ``nextCursor`` left off."""
        while True:
            page = self.list_memories_page(subject=subject, kind=kind, status=status, limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def list_memories_page(
        self,
        *,
        subject: Optional[str] = None,
        kind: Optional[t.MemoryKind] = None,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> t.MemoryPage:
        """One page of ``list_memories``, with its ``nextCursor`` (None on the last page)."""
        query = {"subject": subject, "kind": kind, "status": status, "limit": limit, "cursor": cursor}
        return cast(t.MemoryPage, self._call(ops.LIST_MEMORIES, query=query))

    def versions(self, memory_id: str) -> List[t.Memory]:
        """Every version of a memory the caller may see, oldest first."""
        return cast(t.MemoryVersions, self._call(ops.MEMORY_VERSIONS, id=memory_id))["items"]

    # Erasure

    def request_erasure(
        self,
        *,
        subject: Optional[str] = None,
        record_ids: Optional[Sequence[str]] = None,
        content: Optional[str] = None,
        scope: Optional[Dict[str, Any]] = None,
        reason: t.ErasureReason = "subject_request",
    ) -> t.ErasureProgress:
        """Asks ELMA to erase a data subject, some records, some content (turned into a keyed fingerprint at
        once), or any other ``scope`` the API takes (e.g. ``{"type": "time_range", ...}``); exactly one of them.
        Roles compliance or dpo, or a data subject for their own records. Follow it with ``erasure(id)`` or
        ``wait_for_erasure(id)``."""
        given: List[Dict[str, Any]] = []
        if subject is not None:
            given.append({"type": "subject", "subject": subject})
        if record_ids is not None:
            given.append({"type": "records", "recordIds": list(record_ids)})
        if content is not None:
            given.append({"type": "content", "text": content})
        if scope is not None:
            given.append(dict(scope))
        if len(given) != 1:
            raise ValueError("name exactly one of subject, record_ids, content or scope")
        body: t.CreateErasureRequest = {"scope": given[0], "reason": reason}
        return cast(t.ErasureProgress, self._call(ops.REQUEST_ERASURE, body=body))

    def erasure(self, request_id: str) -> t.ErasureProgress:
        """An erasure's live progress: status, current step, finished steps, closure size."""
        return cast(t.ErasureProgress, self._call(ops.ERASURE, id=request_id))

    def wait_for_erasure(self, request_id: str, *, timeout: float = 300.0, interval: float = 1.0) -> t.ErasureProgress:
        """Polls ``erasure(request_id)`` until it is no longer running (completed, awaiting approval, or ended
        without a certificate); raises TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            progress = self.erasure(request_id)
            if progress["status"] in _SETTLED:
                return progress
            if time.monotonic() >= deadline:
                raise TimeoutError(f"erasure {request_id} still {progress['status']} after {timeout:g} s")
            time.sleep(interval)

    def approve_erasure(self, request_id: str) -> t.ErasureProgress:
        """Approves an erasure awaiting approval (role dpo, not the requester)."""
        return cast(t.ErasureProgress, self._call(ops.APPROVE_ERASURE, id=request_id))

    def erasures(self, *, status: Optional[str] = None, page_size: Optional[int] = None) -> Iterator[t.ErasureProgress]:
        """The tenant's erasures this caller may see (roles compliance, dpo and auditor; a data subject their
        own), page after page as the iteration goes on."""
        cursor: Optional[str] = None
        while True:
            page = self.erasures_page(status=status, limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def erasures_page(self, *, status: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> t.ErasurePage:
        """One page of ``erasures``, with its ``nextCursor`` (None on the last page)."""
        return cast(t.ErasurePage, self._call(ops.LIST_ERASURES, query={"status": status, "limit": limit, "cursor": cursor}))

    def certificate(self, request_id: str) -> t.SignedCertificate:
        """The signed erasure certificate (JSON); save it and check it with ``elma verify-certificate``."""
        return cast(t.SignedCertificate, self._call(ops.CERTIFICATE, id=request_id))

    def certificate_pdf(self, request_id: str) -> bytes:
        """The certificate as a PDF for a compliance officer."""
        _, data = self._http.call(
            ops.CERTIFICATE_PDF.method, _path(ops.CERTIFICATE_PDF, request_id), idempotent=True, accept=ops.CERTIFICATE_PDF.accept
        )
        return data

    # Plumbing

    def _call(
        self,
        op: Operation,
        *,
        id: Optional[str] = None,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        idempotent: Optional[bool] = None,
    ) -> Any:
        unknown = set(query or {}) - set(op.query)
        if unknown:  # a programming error here, caught before the server sees it
            raise AssertionError(f"{op.method} {op.path} takes no query parameter {sorted(unknown)}")
        return self._http.json(
            op.method,
            _path(op, id),
            query=query,
            body=body,
            idempotent=op.idempotent if idempotent is None else idempotent,
            accept=op.accept,
        )

    def _purpose(self, purpose: Optional[str], call: str) -> str:
        chosen = purpose or self.purpose
        if not chosen:
            raise ValueError(f"{call} needs a purpose: pass purpose= or create the client with one")
        return chosen


def _path(op: Operation, id: Optional[str]) -> str:
    if "{id}" in op.path:
        if id is None:
            raise ValueError(f"{op.path} needs an id")
        return op.path.replace("{id}", quote(id))
    return op.path


def _put(target: Any, key: str, value: Any) -> None:
    if value is not None:
        target[key] = value


def _source(system: str, external_id: Optional[str], channel: Optional[str]) -> t.EventSource:
    source: t.EventSource = {"system": system}
    _put(source, "externalId", external_id)
    _put(source, "channel", channel)
    return source


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _iso(value: Time) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("a datetime sent to ELMA carries its time zone (e.g. datetime.now(timezone.utc))")
        return value.isoformat()
    return value

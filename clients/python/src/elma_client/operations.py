"""Every ELMA operation the client calls: method, path, query parameters, body and answer shapes.

The client builds its requests from this table only, and tests/test_openapi.py checks the table against the
OpenAPI document of a running ELMA (each path and method exists, answers with ``status``, accepts the query
parameters and body fields, and returns the fields the answer type names), so the two cannot drift apart.
"""

from typing import NamedTuple, Optional, Tuple

from . import types as t


class Operation(NamedTuple):
    method: str
    #: The path template as the OpenAPI document spells it.
    path: str
    #: The success status.
    status: int
    query: Tuple[str, ...] = ()
    #: The request body's TypedDict (every key must be a field of the documented body).
    body: Optional[type] = None
    #: The answer's TypedDict; None for a binary answer.
    response: Optional[type] = None
    #: Safe to send again after a 503 or 429 with Retry-After.
    idempotent: bool = False
    #: The answer's media type.
    accept: str = "application/json"


REMEMBER = Operation("POST", "/v1/events", 202, body=t.IngestBatch, response=t.RememberResult)
WRITE_MEMORY = Operation("POST", "/v1/memories", 201, body=t.WriteMemoryRequest, response=t.WriteMemoryResult)
# Recall reads; the audit entry it writes per attempt records what was asked, which a retry asks again.
RECALL = Operation("POST", "/v1/recall", 200, body=t.RecallRequest, response=t.RecallResult, idempotent=True)
FEEDBACK = Operation("POST", "/v1/recall/{id}/feedback", 200, body=t.FeedbackRequest, response=t.FeedbackResult)
GET_MEMORY = Operation("GET", "/v1/memories/{id}", 200, query=("purpose", "session"), response=t.Memory, idempotent=True)
LIST_MEMORIES = Operation(
    "GET", "/v1/memories", 200, query=("subject", "kind", "status", "cursor", "limit"), response=t.MemoryPage, idempotent=True
)
MEMORY_VERSIONS = Operation("GET", "/v1/memories/{id}/versions", 200, response=t.MemoryVersions, idempotent=True)
REQUEST_ERASURE = Operation("POST", "/v1/erasures", 202, body=t.CreateErasureRequest, response=t.ErasureProgress)
ERASURE = Operation("GET", "/v1/erasures/{id}", 200, response=t.ErasureProgress, idempotent=True)
LIST_ERASURES = Operation("GET", "/v1/erasures", 200, query=("status", "cursor", "limit"), response=t.ErasurePage, idempotent=True)
APPROVE_ERASURE = Operation("POST", "/v1/erasures/{id}/approve", 200, response=t.ErasureProgress)
CERTIFICATE = Operation("GET", "/v1/erasures/{id}/certificate", 200, response=t.SignedCertificate, idempotent=True)
CERTIFICATE_PDF = Operation("GET", "/v1/erasures/{id}/certificate.pdf", 200, idempotent=True, accept="application/pdf")

ALL = {
    name: op
    for name, op in globals().items()
    if isinstance(op, Operation)
}


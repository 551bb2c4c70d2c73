"""The shapes the client sends and reads, as ELMA's OpenAPI document (/docs/openapi.json) describes them.

Responses are plain dicts decoded from JSON; these TypedDicts name the fields the client relies on. Every key
declared here is checked against the document of a running ELMA by the client's tests (tests/test_openapi.py), so a
field renamed or dropped on the server fails there rather than in an agent. Fields the document marks optional are
in the ``total=False`` halves.
"""

from typing import Any, Dict, List, Literal, Optional, TypedDict

MemoryKind = Literal["working", "episodic", "semantic", "procedural", "relational"]
Sensitivity = Literal["public", "internal", "confidential", "restricted"]
RetentionClass = Literal["session", "standard", "long_term", "legal_hold"]
ErasureReason = Literal["subject_request", "retention", "correction", "legal"]


class Fact(TypedDict):
    """An entity-attribute-value statement; an event carrying one also becomes a semantic memory."""

    entity: str
    attribute: str
    value: Any


class _ContentRequired(TypedDict):
    text: str


class MemoryContent(_ContentRequired, total=False):
    """What a memory says: ``text`` (searchable), and a fact, procedure or relation for structured kinds."""

    fact: Fact
    procedure: Dict[str, Any]
    relation: Dict[str, Any]


class _EventSourceRequired(TypedDict):
    system: str


class EventSource(_EventSourceRequired, total=False):
    externalId: str
    channel: str


class _EventInputRequired(TypedDict):
    subject: str
    occurredAt: str
    activity: str
    content: MemoryContent
    source: EventSource


class EventInput(_EventInputRequired, total=False):
    """One event for ``POST /v1/events``."""

    sensitivity: Sensitivity
    purposes: List[str]
    retention: RetentionClass
    project: str
    session: str
    idempotencyKey: str


class IngestBatch(TypedDict):
    """``POST /v1/events`` with up to 1,000 events, written all or nothing."""

    events: List[EventInput]


class IngestedEvent(TypedDict):
    """An event ELMA holds: ``duplicate`` when it already held it (same source id or idempotency key)."""

    id: str
    duplicate: bool


class RememberResult(TypedDict):
    """The answer to ``remember``: one entry per event, in order, and the log position for read-your-writes."""

    events: List[IngestedEvent]
    position: str


class _WriteMemoryRequired(TypedDict):
    content: MemoryContent
    sourceEventIds: List[str]


class WriteMemoryRequest(_WriteMemoryRequired, total=False):
    """``POST /v1/memories``: an explicit memory learnt from events it cites."""

    kind: MemoryKind
    subject: str
    sensitivity: Sensitivity
    purposes: List[str]
    validFrom: str
    validTo: str
    confidence: float
    retention: RetentionClass
    idempotencyKey: str
    session: str
    ttlSeconds: int


class MemoryPolicy(TypedDict, total=False):
    owner: str
    roles: List[str]
    purposes: List[str]
    sensitivity: Sensitivity


class Provenance(TypedDict, total=False):
    sourceEventIds: List[str]
    parentIds: List[str]


# `class` is a Python keyword, hence the functional form.
MemoryRetention = TypedDict("MemoryRetention", {"class": RetentionClass, "expiresAt": Optional[str]}, total=False)


class _MemoryRequired(TypedDict):
    id: str
    tenant: str
    subject: str
    kind: MemoryKind
    content: MemoryContent
    validFrom: str
    validTo: Optional[str]
    recordedAt: str
    policy: MemoryPolicy
    provenance: Provenance
    confidence: float
    sourceTrust: str
    tainted: bool
    version: int
    status: str
    retention: MemoryRetention


class Memory(_MemoryRequired, total=False):
    """A memory record as ``GET /v1/memories/{id}`` returns it, with its provenance and status."""

    session: str
    instructionLike: bool


class WriteMemoryResult(TypedDict):
    memory: Memory
    position: str
    duplicate: bool


class _RecallRequestRequired(TypedDict):
    query: str
    purpose: str


class RecallSource(TypedDict, total=False):
    """A source system and/or channel (at least one of the two)."""

    system: str
    channel: str


class RecallFilter(TypedDict, total=False):
    """The scope of a recall: keys combine with AND, the values of one key with OR, each list 1 to 100 values.
    It only narrows what the caller's policy lets it see. ``occurredAfter <= validFrom < occurredBefore`` (ISO 8601
    with an offset)."""

    subjects: List[str]
    entities: List[str]
    projects: List[str]
    sessions: List[str]
    sources: List[RecallSource]
    occurredAfter: str
    occurredBefore: str
    kinds: List[MemoryKind]


class RecallRequest(_RecallRequestRequired, total=False):
    budgetTokens: int
    filter: RecallFilter
    kinds: List[MemoryKind]  # deprecated: filter["kinds"]
    asOf: str
    knownAsOf: str
    consistency: Literal["eventual", "strong"]
    afterPosition: str
    session: str
    hops: int


class Citation(TypedDict):
    """Where a recalled item comes from: the record, its version, its source events and times."""

    id: str
    version: int
    kind: MemoryKind
    sourceEventIds: List[str]
    validFrom: str
    validTo: Optional[str]
    recordedAt: str
    confidence: float
    sourceTrust: str
    disputed: bool
    instructionLike: bool


class RecallScores(TypedDict, total=False):
    """What an item's score is made of: each route's contribution, the smoothing lift, or an edge's hop score."""

    bm25: float
    dense: float
    smoothing: float
    hop: float


class _RecallReasonRequired(TypedDict):
    route: Literal["bm25", "dense", "both", "neighbour", "hop", "expansion"]


class RecallReason(_RecallReasonRequired, total=False):
    """Why an item was a candidate: ``neighbourOf`` for a neighbour, ``fromEntity`` and ``hop`` for an edge."""

    neighbourOf: str
    fromEntity: str
    hop: int


class RecallItem(TypedDict):
    id: str
    rank: int
    kind: MemoryKind
    text: str
    score: float
    scores: RecallScores
    utility: float
    reason: RecallReason
    tokens: int
    citation: Citation


class RecallResult(TypedDict):
    """A budgeted, cited context pack: ``items`` best first (``rank`` 1 is the best), ``context`` ready to paste into
    a prompt, in the order ``promptOrder`` gives (the most important last)."""

    recallId: str
    items: List[RecallItem]
    promptOrder: List[str]
    context: str
    usedTokens: int
    contextTokens: int
    budgetTokens: int
    candidates: int


class FeedbackRequest(TypedDict):
    adopted: List[str]


class FeedbackResult(TypedDict):
    adopted: int


class CreateErasureRequest(TypedDict):
    scope: Dict[str, Any]
    reason: ErasureReason


class _ErasureProgressRequired(TypedDict):
    requestId: str
    status: str
    steps: List[Dict[str, Any]]
    certificateAvailable: bool


class ErasureProgress(_ErasureProgressRequired, total=False):
    """An erasure's live progress: status, the step it is on, the steps it finished. Ids and counts, and the approver's display name."""

    tenant: str
    reason: ErasureReason
    currentStep: Optional[str]
    closureSize: Optional[int]
    blockedByLegalHold: List[str]
    approvalDeadline: str
    approvedBy: str
    approvedByName: str
    failure: Dict[str, Any]


class CertificateSignature(TypedDict):
    alg: str
    kid: str
    value: str


class SignedCertificate(TypedDict):
    """An erasure certificate and its Ed25519 signature; ``elma verify-certificate`` checks it offline."""

    certificate: Dict[str, Any]
    signature: CertificateSignature


class MemoryPage(TypedDict):
    """One page of ``GET /v1/memories``; ``nextCursor`` is None on the last page."""

    items: List[Memory]
    nextCursor: Optional[str]


class MemoryVersions(TypedDict):
    """``GET /v1/memories/{id}/versions``: every version the caller may see, oldest first."""

    items: List[Memory]


class ErasurePage(TypedDict):
    """One page of ``GET /v1/erasures``; ``nextCursor`` is None on the last page."""

    items: List[ErasureProgress]
    nextCursor: Optional[str]

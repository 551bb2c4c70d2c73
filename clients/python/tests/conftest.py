"""One real ELMA for the whole test session (see elma_server.py), and clients for the callers the tests play."""

import os
import uuid
from typing import Dict, Iterator

import pytest
from elma_server import ElmaServer, RunningElma, StartedElma

from elma_client import Elma

# One request of each class at a time and no queue: a test can then hold the only slot with a request whose body
# has not arrived, and see a real 503 SERVER.OVERLOADED with Retry-After (test_retry.py). The tests send one request
# at a time, so the bound costs them nothing.
ADMISSION = {"ELMA_MAX_INFLIGHT": "1", "ELMA_MAX_QUEUE": "0"}

CALLERS = {
    "agent": ["--tenant", "acme", "--sub", "agent-7", "--purposes", "support,sales"],
    # An agent of another tenant who is also its compliance officer: one token for every cross-tenant case.
    "other_tenant": ["--tenant", "globex", "--sub", "agent-9", "--roles", "agent,compliance", "--purposes", "support,sales"],
    "compliance": ["--tenant", "acme", "--sub", "comp-1", "--roles", "compliance"],
}


@pytest.fixture(scope="session")
def elma_server() -> Iterator[ElmaServer]:
    url, data_dir = os.environ.get("ELMA_TEST_URL"), os.environ.get("ELMA_TEST_DATA_DIR")
    server: ElmaServer = RunningElma(url, data_dir, CALLERS) if url and data_dir else StartedElma(ADMISSION, CALLERS)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tokens(elma_server: ElmaServer) -> Dict[str, str]:
    return elma_server.minted


@pytest.fixture
def elma(elma_server: ElmaServer, tokens: Dict[str, str]) -> Elma:
    """An agent of tenant acme (purposes support and sales)."""
    return Elma(elma_server.url, tokens["agent"], purpose="support")


@pytest.fixture
def other_tenant(elma_server: ElmaServer, tokens: Dict[str, str]) -> Elma:
    """An agent of tenant globex with the same purposes."""
    return Elma(elma_server.url, tokens["other_tenant"], purpose="support")


@pytest.fixture
def compliance(elma_server: ElmaServer, tokens: Dict[str, str]) -> Elma:
    """A compliance officer of tenant acme."""
    return Elma(elma_server.url, tokens["compliance"])


@pytest.fixture
def subject() -> str:
    """A data subject no other test uses (erasure tombstones are per subject)."""
    return f"cust-{uuid.uuid4().hex[:12]}"

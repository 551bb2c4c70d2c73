"""Problems ELMA answers with, as the client raises them: status, stable code, title, detail and request id."""

import pytest

from elma_client import Elma, ElmaConnectionError, ElmaError


def test_an_unknown_memory_is_a_404_problem_with_its_code_and_request_id(elma: Elma) -> None:
    with pytest.raises(ElmaError) as raised:
        elma.get("mem_ep_00000000-0000-0000-0000-000000000000")
    error = raised.value
    assert (error.status, error.code, error.title) == (404, "MEMORY.NOT_FOUND", "MEMORY.NOT_FOUND")
    assert error.type == "https://elma.dev/problems/memory-not-found"
    assert error.request_id and error.request_id in str(error)
    assert str(error).startswith("404 MEMORY.NOT_FOUND: ")


def test_another_tenants_memory_is_not_found_rather_than_forbidden(elma: Elma, other_tenant: Elma, subject: str) -> None:
    event_id = elma.remember("Halvorsen pays by bank transfer.", subject=subject)["events"][0]["id"]
    mine = elma.get(f"mem_ep_{event_id}")

    with pytest.raises(ElmaError) as raised:
        other_tenant.get(mine["id"])
    assert (raised.value.status, raised.value.code) == (404, "MEMORY.NOT_FOUND")
    # Nor does recall in the other tenant find it.
    pack = other_tenant.recall("Halvorsen bank transfer", consistency="strong")
    assert all(item["id"] != mine["id"] for item in pack["items"])


def test_a_purpose_the_token_does_not_carry_is_a_403_problem(elma: Elma) -> None:
    with pytest.raises(ElmaError) as raised:
        elma.recall("anything", purpose="research")
    assert (raised.value.status, raised.value.code) == (403, "RECALL.PURPOSE_NOT_PERMITTED")


def test_an_agent_may_not_ask_to_erase_someone_else(elma: Elma, subject: str) -> None:
    with pytest.raises(ElmaError) as raised:
        elma.request_erasure(subject=subject)
    assert raised.value.status == 403
    assert raised.value.code in ("AUTH.FORBIDDEN", "POLICY.DENIED")


def test_a_schema_violation_is_a_422_naming_the_field(elma: Elma) -> None:
    with pytest.raises(ElmaError) as raised:
        elma.recall("anything", budget_tokens=5)
    assert (raised.value.status, raised.value.code) == (422, "REQUEST.VALIDATION_FAILED")
    assert [issue["path"] for issue in raised.value.errors] == ["budgetTokens"]


def test_a_body_that_is_not_json_is_a_400_problem(elma: Elma) -> None:
    # The client always sends JSON; its transport is driven directly to see a 400 come back as a problem.
    with pytest.raises(ElmaError) as raised:
        elma._http.call("POST", "/v1/recall", raw_body=b'{"query": "unfinished', idempotent=False)
    assert (raised.value.status, raised.value.code) == (400, "REQUEST.MALFORMED_JSON")


def test_a_forged_token_is_refused_and_never_appears_in_the_error(elma_server, tokens) -> None:
    header, payload, _ = tokens["agent"].split(".")
    forged = f"{header}.{payload}.{'A' * 43}"
    with pytest.raises(ElmaError) as raised:
        Elma(elma_server.url, forged, purpose="support").recall("anything")
    assert (raised.value.status, raised.value.code) == (401, "AUTH.TOKEN_INVALID")
    for text in (str(raised.value), repr(raised.value), raised.value.detail, raised.value.title):
        assert forged not in text and payload not in text


def test_an_address_where_nothing_listens_names_the_address_but_not_the_token(tokens) -> None:
    from elma_server import free_ports

    (port,) = free_ports(1)
    with pytest.raises(ElmaConnectionError) as raised:
        Elma(f"http://user:secret@127.0.0.1:{port}", tokens["agent"]).get("mem_x")
    message = str(raised.value)
    assert raised.value.code == "CLIENT.UNREACHABLE" and raised.value.status is None
    assert f"http://127.0.0.1:{port}" in message
    assert tokens["agent"] not in message and "secret" not in message


def test_a_mistake_in_the_call_is_caught_before_anything_is_sent(elma: Elma) -> None:
    with pytest.raises(ValueError):
        Elma(elma.url, "a token with spaces")
    with pytest.raises(ValueError):
        elma.request_erasure(subject="a", record_ids=["b"])
    with pytest.raises(ValueError):
        Elma(elma.url, "t").recall("no purpose anywhere")
    from datetime import datetime

    with pytest.raises(ValueError):
        elma.remember("naive time", subject="x", occurred_at=datetime(2026, 1, 1))

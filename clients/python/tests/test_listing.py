"""Listing through the client: memories page by page, a memory's versions, the erasures a compliance officer sees."""

import pytest

from elma_client import Elma, ElmaError


def test_a_subjects_memories_are_listed_across_pages_and_only_to_their_tenant(elma: Elma, other_tenant: Elma, subject: str) -> None:
    texts = ["第一次来电：询问发票。", "Second call: asked about the invoice.", "第三次来电：发票已寄出。"]
    events = elma.remember_events(
        [
            {
                "subject": subject,
                "occurredAt": f"2026-11-2{i}T10:00:00Z",
                "activity": "chat.turn",
                "content": {"text": text},
                "source": {"system": "crm"},
            }
            for i, text in enumerate(texts)
        ]
    )["events"]
    elma.recall("发票", consistency="strong")  # waits until the projection has applied the events

    first = elma.list_memories_page(subject=subject, kind="episodic", limit=2)
    assert len(first["items"]) == 2 and first["nextCursor"]
    listed = list(elma.list_memories(subject=subject, kind="episodic", page_size=2))
    assert sorted(m["id"] for m in listed) == sorted(f"mem_ep_{e['id']}" for e in events)
    assert sorted(m["content"]["text"] for m in listed) == sorted(texts)

    assert list(other_tenant.list_memories(subject=subject)) == []


def test_a_forged_cursor_is_a_400_problem(elma: Elma) -> None:
    with pytest.raises(ElmaError) as raised:
        elma.list_memories_page(cursor="Zm9yZ2Vk")
    assert raised.value.status == 400
    assert raised.value.code and not raised.value.code.startswith("HTTP.")


def test_a_memorys_versions_are_listed_oldest_first_and_hidden_from_another_tenant(
    elma: Elma, other_tenant: Elma, subject: str
) -> None:
    event_id = elma.remember("Marlow's order ships Friday.", subject=subject)["events"][0]["id"]
    memory_id = f"mem_ep_{event_id}"
    elma.get(memory_id)

    versions = elma.versions(memory_id)
    assert [v["id"] for v in versions] == [memory_id] * len(versions)
    assert [v["version"] for v in versions] == sorted(v["version"] for v in versions)
    with pytest.raises(ElmaError) as raised:
        other_tenant.versions(memory_id)
    assert (raised.value.status, raised.value.code) == (404, "MEMORY.NOT_FOUND")


def test_a_compliance_officer_lists_the_tenants_erasures(compliance: Elma, elma_server, tokens, subject: str) -> None:
    requested = compliance.request_erasure(subject=subject)
    compliance.wait_for_erasure(requested["requestId"], timeout=240)

    listed = [e["requestId"] for e in compliance.erasures(page_size=1)]
    assert requested["requestId"] in listed
    assert len(listed) == len(set(listed))
    other = Elma(elma_server.url, tokens["other_tenant"])
    assert requested["requestId"] not in [e["requestId"] for e in other.erasures()]

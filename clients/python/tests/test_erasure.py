"""Erasure through the client: a compliance officer asks, follows the steps until certified, fetches the proof."""

import time

import pytest

from elma_client import Elma, ElmaError


def test_an_erased_subject_is_certified_and_gone_from_get_and_recall(elma: Elma, compliance: Elma, subject: str) -> None:
    events = elma.remember_events(
        [
            {
                "subject": subject,
                "occurredAt": "2026-11-25T09:30:00Z",
                "activity": "chat.turn",
                "content": {"text": "赵女士的新地址是杭州西湖区文三路 88 号。"},
                "source": {"system": "crm", "externalId": f"{subject}-a"},
            },
            {
                "subject": subject,
                "occurredAt": "2026-11-26T10:00:00Z",
                "activity": "ticket.updated",
                "content": {"text": "Ms Zhao asked for a callback about the Wexford order."},
                "source": {"system": "helpdesk", "externalId": f"{subject}-b"},
            },
        ]
    )["events"]
    ids = [f"mem_ep_{e['id']}" for e in events]
    assert [elma.get(i)["subject"] for i in ids] == [subject, subject]

    requested = compliance.request_erasure(subject=subject)
    assert requested["status"] in ("running", "completed")

    # Followed step by step: the finished steps only ever grow, up to the certificate. (The deadline only keeps a
    # stuck workflow from hanging the run.)
    progress, finished = requested, [0]
    deadline = time.monotonic() + 240
    while progress["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        progress = compliance.erasure(requested["requestId"])
        finished.append(len(progress["steps"]))
    assert finished == sorted(finished)
    assert progress["status"] == "completed", progress.get("failure")
    assert progress["certificateAvailable"] is True
    assert progress["closureSize"] == 2
    assert [s["step"] for s in progress["steps"]][-2:] == ["verify", "certify"]

    signed = compliance.certificate(requested["requestId"])
    certificate = signed["certificate"]
    assert certificate["requestId"] == requested["requestId"]
    assert sorted(r["id"] for r in certificate["closure"]["records"]) == sorted(ids)
    assert signed["signature"]["alg"] == "EdDSA"
    # No name of the data subject outlives the erasure in its proof.
    assert subject not in str(signed)
    assert compliance.certificate_pdf(requested["requestId"]).startswith(b"%PDF-")

    for memory_id in ids:
        with pytest.raises(ElmaError) as raised:
            elma.get(memory_id)
        assert raised.value.code == "MEMORY.NOT_FOUND"
    assert not [i for i in elma.recall("赵女士 杭州 地址", consistency="strong")["items"] if i["id"] in ids]
    assert not [i for i in elma.recall("Ms Zhao callback Wexford", consistency="strong")["items"] if i["id"] in ids]


def test_another_tenant_cannot_see_an_erasure(compliance: Elma, elma_server, tokens, subject: str) -> None:
    requested = compliance.request_erasure(subject=subject)
    other = Elma(elma_server.url, tokens["other_tenant"])
    for call in (other.erasure, other.certificate):
        with pytest.raises(ElmaError) as raised:
            call(requested["requestId"])
        assert (raised.value.status, raised.value.code) == (404, "ERASURE.NOT_FOUND")
    assert compliance.wait_for_erasure(requested["requestId"], timeout=240)["status"] == "completed"


def test_an_unknown_erasure_is_not_found(compliance: Elma) -> None:
    with pytest.raises(ElmaError) as raised:
        compliance.erasure("era_00000000-0000-0000-0000-000000000000")
    assert (raised.value.status, raised.value.code) == (404, "ERASURE.NOT_FOUND")

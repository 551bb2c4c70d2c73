"""Remembering, recalling and reading memories through the client against a started ELMA."""

from elma_client import Elma


def test_an_event_remembered_in_chinese_is_recalled_with_its_citation(elma: Elma, subject: str) -> None:
    remembered = elma.remember("王先生说交付风险很高，希望下周确认发货日期。", subject=subject, source="crm")
    (event,) = remembered["events"]
    assert event["duplicate"] is False

    pack = elma.recall("交付风险", consistency="strong")

    hit = next(item for item in pack["items"] if item["citation"]["sourceEventIds"] == [event["id"]])
    assert hit["id"] == f"mem_ep_{event['id']}"
    assert hit["text"] == "王先生说交付风险很高，希望下周确认发货日期。"
    assert "王先生说交付风险很高" in pack["context"]
    assert pack["usedTokens"] <= pack["budgetTokens"]


def test_a_fact_remembered_in_english_becomes_a_semantic_memory_that_get_returns(elma: Elma, subject: str) -> None:
    remembered = elma.remember(
        "Orchard Ltd confirmed the contract renews in March.",
        subject=subject,
        fact={"entity": "Orchard Ltd", "attribute": "renewal_month", "value": "March"},
    )
    event_id = remembered["events"][0]["id"]

    pack = elma.recall("when does the Orchard contract renew?", consistency="strong", budget_tokens=500)
    assert any(item["citation"]["sourceEventIds"] == [event_id] for item in pack["items"])

    memory = elma.get(f"mem_se_{event_id}")
    assert memory["kind"] == "semantic"
    assert memory["content"]["fact"] == {"entity": "Orchard Ltd", "attribute": "renewal_month", "value": "March"}
    assert memory["provenance"]["sourceEventIds"] == [event_id]
    assert memory["subject"] == subject
    assert memory["status"] == "active"


def test_the_same_source_id_sent_again_is_a_duplicate_not_a_second_memory(elma: Elma, subject: str) -> None:
    sent = dict(subject=subject, source="crm", external_id=f"{subject}-1", occurred_at="2026-11-20T10:00:00Z")
    first = elma.remember("Prefers invoices by post.", **sent)
    again = elma.remember("Prefers invoices by post.", **sent)
    assert again["events"][0] == {**first["events"][0], "duplicate": True}


def test_feedback_records_which_recalled_memories_were_used(elma: Elma, subject: str) -> None:
    event_id = elma.remember("The Quillon account wants weekly status calls.", subject=subject)["events"][0]["id"]
    pack = elma.recall("Quillon status calls", consistency="strong")
    used = [item["id"] for item in pack["items"] if item["citation"]["sourceEventIds"] == [event_id]]
    assert used

    assert elma.feedback(pack["recallId"], used) == {"adopted": len(used)}
    assert elma.get(used[0])["usage"]["adopted"] == 1


def test_an_explicit_memory_cites_the_events_it_was_learnt_from(elma: Elma, subject: str) -> None:
    event_id = elma.remember("李女士希望以后只用邮件联系她。", subject=subject)["events"][0]["id"]
    written = elma.write_memory("李女士偏好邮件联系", source_event_ids=[event_id], subject=subject)
    assert written["memory"]["provenance"]["sourceEventIds"] == [event_id]
    assert elma.get(written["memory"]["id"])["content"]["text"] == "李女士偏好邮件联系"


def test_recall_by_a_client_from_the_environment(elma_server, tokens, subject: str) -> None:
    env = {"ELMA_URL": elma_server.url, "ELMA_TOKEN": tokens["agent"], "ELMA_PURPOSE": "sales"}
    client = Elma.from_env(env)
    assert (client.url, client.purpose) == (elma_server.url, "sales")
    client.remember("Brightwater renews in June.", subject=subject, purposes=["sales"])
    pack = client.recall("Brightwater renewal", consistency="strong")
    assert "Brightwater renews in June." in [item["text"] for item in pack["items"]]

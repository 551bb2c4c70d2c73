"""Recall's answer through the client: best first, ranked, with the context in prompt order; and the filter as sent."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, Iterator, List

import pytest

from elma_client import Elma


def test_items_come_best_first_and_the_context_follows_prompt_order(elma: Elma, subject: str) -> None:
    elma.remember("Quarry Lane depot closes early on Fridays, says the dispatcher.", subject=subject)
    elma.remember("The Quarry Lane depot address is 4 Mill Road.", subject=subject)
    pack = elma.recall("Quarry Lane depot Fridays", consistency="strong", budget_tokens=500)

    items = pack["items"]
    assert [item["rank"] for item in items] == list(range(1, len(items) + 1))
    assert all(later["utility"] <= earlier["utility"] for earlier, later in zip(items, items[1:]))
    assert sorted(pack["promptOrder"]) == sorted(item["id"] for item in items)
    texts = {item["id"]: item["text"] for item in items}
    numbered = [f"[{n}] {texts[item_id]}" for n, item_id in enumerate(pack["promptOrder"], start=1)]
    assert [line for line in pack["context"].split("\n") if line.startswith("[") and not line.startswith("    ")] == numbered
    assert all(item["reason"]["route"] in ("bm25", "dense", "both", "neighbour", "hop", "expansion") for item in items)


class _Recording(BaseHTTPRequestHandler):
    bodies: List[Dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        length = int(self.headers["content-length"])
        _Recording.bodies.append(json.loads(self.rfile.read(length)))
        answer = json.dumps({"recallId": "rcl_1", "items": [], "promptOrder": [], "context": ""}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def recording() -> Iterator[str]:
    """A local HTTP server that records what it is sent: what the client puts on the wire, whatever ELMA answers."""
    _Recording.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_filter_is_sent_as_the_api_takes_it(recording: str) -> None:
    client = Elma(recording, "token", purpose="support")
    client.recall(
        "交付风险",
        filter={
            "subjects": ["cust-wang"],
            "sources": [{"system": "crm", "channel": "chat"}],
            "occurredAfter": "2026-01-01T00:00:00+00:00",
            "kinds": ["episodic"],
        },
    )
    assert _Recording.bodies == [
        {
            "query": "交付风险",
            "purpose": "support",
            "filter": {
                "subjects": ["cust-wang"],
                "sources": [{"system": "crm", "channel": "chat"}],
                "occurredAfter": "2026-01-01T00:00:00+00:00",
                "kinds": ["episodic"],
            },
        }
    ]

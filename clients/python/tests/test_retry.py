"""Retries after a real 503 SERVER.OVERLOADED with Retry-After: ELMA runs with one request of each class at a time
and no queue (conftest.ADMISSION), and a request whose body has not yet arrived holds that one slot."""

import json
import select
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import List, Tuple

import pytest

from elma_client import Elma, ElmaError
from elma_client._http import parse_retry_after


class HeldSlot:
    """A ``POST /v1/memories`` whose body stops after its first byte: ELMA admits a request before reading its body,
    so the request holds the one slot of its class until ``release``. One that arrives while the slot is still busy
    (the previous test's last call finishing) is itself shed at once and holds nothing: then another one is sent."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.body = json.dumps({"content": {"text": "held"}, "sourceEventIds": ["00000000-0000-4000-8000-000000000000"]}).encode()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.sock = self._send_head()
            if self._wait_until_held(deadline):
                return
            self.sock.close()
        raise RuntimeError("the slot was never held")

    def _send_head(self) -> socket.socket:
        parsed = urllib.parse.urlsplit(self.url)
        sock = socket.create_connection((parsed.hostname, parsed.port), timeout=30)
        head = (
            f"POST /v1/memories HTTP/1.1\r\nHost: {parsed.netloc}\r\nAuthorization: Bearer {self.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + self.body[:1])
        return sock

    def _answered(self) -> bool:
        """Whether ELMA answered the held request before its body was complete: it was shed."""
        return bool(select.select([self.sock], [], [], 0)[0])

    def _wait_until_held(self, deadline: float) -> bool:
        # Held once another request of the class is refused while the held one is still unanswered.
        while time.monotonic() < deadline and not self._answered():
            request = urllib.request.Request(f"{self.url}/v1/memories/probe", headers={"authorization": f"Bearer {self.token}"})
            try:
                urllib.request.urlopen(request, timeout=10).close()
            except urllib.error.HTTPError as response:
                if response.code == 503 and not self._answered():
                    return True
            time.sleep(0.05)
        return False

    def release(self) -> bytes:
        """Sends the rest of the body and reads the answer to the end."""
        self.sock.sendall(self.body[1:])
        answer = b""
        while chunk := self.sock.recv(65536):
            answer += chunk
        self.sock.close()
        return answer


def test_an_idempotent_read_is_retried_after_retry_after_and_succeeds(elma_server, tokens, subject: str) -> None:
    plain = Elma(elma_server.url, tokens["agent"], purpose="support")
    memory_id = f"mem_ep_{plain.remember('Lindqvist prefers morning calls.', subject=subject)['events'][0]['id']}"

    slot = HeldSlot(elma_server.url, tokens["agent"])
    retries: List[Tuple[str, int, float]] = []

    def on_retry(error: ElmaError, attempt: int, wait: float) -> None:
        retries.append((error.code, attempt, wait))
        # The slot is freed before the retry goes out, so the retry is admitted.
        assert slot.release().startswith(b"HTTP/1.1 ")

    client = Elma(elma_server.url, tokens["agent"], purpose="support", on_retry=on_retry)
    assert client.get(memory_id)["id"] == memory_id
    assert len(retries) == 1
    code, attempt, wait = retries[0]
    assert (code, attempt) == ("SERVER.OVERLOADED", 1) and wait >= 1


def test_a_write_that_is_not_idempotent_is_not_sent_twice(elma_server, tokens, subject: str) -> None:
    plain = Elma(elma_server.url, tokens["agent"], purpose="support")
    event_id = plain.remember("Okafor asked for a quote.", subject=subject)["events"][0]["id"]

    slot = HeldSlot(elma_server.url, tokens["agent"])
    retries: List[int] = []
    client = Elma(elma_server.url, tokens["agent"], on_retry=lambda error, attempt, wait: retries.append(attempt))
    try:
        with pytest.raises(ElmaError) as raised:
            client.write_memory("Okafor wants a quote", source_event_ids=[event_id])
    finally:
        slot.release()
    assert (raised.value.status, raised.value.code) == (503, "SERVER.OVERLOADED")
    assert raised.value.retry_after is not None and raised.value.retry_after >= 1
    assert retries == []


def test_retry_after_is_read_as_seconds_or_as_an_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None

"""The JSON-lines protocol every Python bridge speaks (scripts/mem0/bridge.py, scripts/peers/bridge.py).

Importing this module takes the process's stdout for the protocol (anything a library prints goes to stderr from
then on) and starts a watcher that exits when the parent does, so a bridge imports it before anything else.

One request per line, `{"id": n, "op": ..., ...}`; one answer per line, `{"id": n, "ok": true, "result": ...}` or
`{"id": n, "ok": false, "error": {"code": ..., "type": ..., "message": ...}}`.
"""

import json
import os
import sys
import threading
import time

# The protocol owns the original stdout; anything a library prints goes to stderr.
_protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def _watch_parent():
    """Exits when the parent does: a parent killed with SIGKILL cannot stop its children."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=_watch_parent, daemon=True).start()


class ProtocolError(Exception):
    """A request the bridge cannot take: an unknown operation, or one before `init`."""

    code = "BAD_REQUEST"


def answer(message):
    _protocol.write(json.dumps(message, ensure_ascii=False) + "\n")
    _protocol.flush()


def serve(ops, *, ready, close, default_code, violation=lambda: None):
    """Answers each request with `ops[op](request)` until `close` is asked for or stdin ends (then calls `close`).

    `ready()` says whether `init` has run; every failure is an answer, coded by the exception's `code` or
    `default_code`. `violation()` returns something the bridge must never do that happened during the request,
    even if the library swallowed it: the request fails with it, and the process exits 3.
    """
    for line in sys.stdin:
        if not line.strip():
            continue
        req_id, closing = None, False
        try:
            req = json.loads(line)
            req_id = req.get("id")
            op = ops.get(req.get("op"))
            if op is None:
                raise ProtocolError(f"unknown op {req.get('op')!r}")
            if op is not ops["init"] and not ready():
                raise ProtocolError("init first")
            closing = op is ops["close"]
            result = op(req)
            if violation() is not None:
                raise violation()
            answer({"id": req_id, "ok": True, "result": result})
        except Exception as error:  # every failure is an answer; violations also end the process
            failure = violation() or error
            code = getattr(failure, "code", default_code)
            answer({"id": req_id, "ok": False, "error": {"code": code, "type": type(failure).__name__, "message": str(failure)}})
            if violation() is not None:
                sys.stderr.write(f"bridge: {code}: {failure}\n")
                os._exit(3)
        if closing:
            return
    close()

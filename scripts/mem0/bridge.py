"""The evaluation's Mem0 baseline (row B5): the real Mem0 OSS package (mem0ai, pinned in requirements.txt), driven
as far as it runs without an LLM, over JSON lines on stdin/stdout.

One request per line, `{"id": n, "op": ..., ...}`; one answer per line, `{"id": n, "ok": true, "result": ...}` or
`{"id": n, "ok": false, "error": {"code": ..., "type": ..., "message": ...}}`. Operations:

  init   {dataDir, embeddingRoot, model, dimensions}   builds `Memory.from_config` (below)
  add    {text, userId, metadata}                      `Memory.add(text, user_id=, metadata=, infer=False)` -> ids
                                                       (`infer: true` only proves the LLM guard below)
  search {query, userId, limit}                        `Memory.search(query, top_k=, filters={"user_id": userId})`
  list   {filters, limit}                              `Memory.get_all(filters=, top_k=)`
  delete {memoryId}                                    `Memory.delete(memory_id)`
  reset  {}                                            `Memory.reset()`
  close  {}                                            closes the stores, answers, exits 0

Configuration (mem0 2.2.1): embedder provider `openai` (any OpenAI-compatible base URL) pointed at the loopback
endpoint the TypeScript side serves with ELMA's embedder; vector store `qdrant` in local path mode (no server), on
disk under dataDir; history SQLite file under dataDir; LLM provider `openai` with a dummy key and a loopback base
URL, replaced after construction by a guard that fails loudly: any LLM call answers LLM_INVOKED and exits 3.

Query and passage roles: mem0's OpenAI embedder drops the `memory_action` ("add", "search", "update") it is given,
but e5 needs `query: ` / `passage: ` prefixes, which ELMA's embedder adds from the role of each text. The one
change here is that a `search` embedding goes to `<root>/query/v1` and every other to `<root>/passage/v1`; the
request itself is still made by mem0's own `OpenAIEmbedding.embed`.

Nothing leaves the machine: telemetry is off (MEM0_TELEMETRY=False, set by the caller), and a socket guard refuses
any connection that is not to a loopback address (NETWORK_BLOCKED, then exit 3). Library output goes to stderr;
stdout carries the protocol alone.
"""

import os
import socket
import sys

# The shared protocol (scripts/python/jsonl_bridge.py), imported first: it takes stdout and watches the parent.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import jsonl_bridge  # noqa: E402

if os.environ.get("MEM0_TELEMETRY", "").lower() not in ("false", "0", "no"):
    sys.stderr.write("bridge.py: MEM0_TELEMETRY must be False\n")
    sys.exit(2)


class Violation(Exception):
    """Something the baseline must never do happened (an LLM call, a connection off this machine)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# The first violation seen, even if the library caught and swallowed the exception: the request fails with it.
_violation = None


def _violate(code, message):
    global _violation
    _violation = _violation or Violation(code, message)
    raise _violation


def _loopback(address):
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return True  # AF_UNIX paths and other non-IP families stay on this machine.
    return host in ("localhost", "::1") or host.startswith("127.")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
        _violate("NETWORK_BLOCKED", "a connection off this machine was attempted")
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
        _violate("NETWORK_BLOCKED", "a connection off this machine was attempted")
    return _connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex



from mem0 import Memory  # noqa: E402  (after the guards: importing mem0 must not reach the network either)
from mem0.embeddings.openai import OpenAIEmbedding  # noqa: E402
from openai import OpenAI  # noqa: E402


class RoleAwareOpenAIEmbedding(OpenAIEmbedding):
    """mem0's OpenAI embedder, sending `search` texts to the query route and all others to the passage route."""

    def __init__(self, config, root):
        super().__init__(config)
        self._clients = {
            role: OpenAI(api_key=self.config.api_key, base_url=f"{root}/{role}/v1") for role in ("query", "passage")
        }

    def _use(self, memory_action):
        self.client = self._clients["query" if memory_action == "search" else "passage"]

    def embed(self, text, memory_action=None):
        self._use(memory_action)
        return super().embed(text, memory_action)

    def embed_batch(self, texts, memory_action="add"):
        self._use(memory_action)
        return super().embed_batch(texts, memory_action)


class ForbiddenLlm:
    """Stands in for mem0's LLM: with inference off it must never be called."""

    def __getattr__(self, name):
        def called(*args, **kwargs):
            _violate("LLM_INVOKED", f"mem0 called its LLM ({name}) although inference is off")

        return called


memory = None


def op_init(req):
    global memory
    data_dir, root, dims = req["dataDir"], req["embeddingRoot"].rstrip("/"), int(req["dimensions"])
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "elma_eval",
                "embedding_model_dims": dims,
                "path": os.path.join(data_dir, "qdrant"),
                "on_disk": True,
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": req["model"],
                "api_key": "elma-local-embedder",
                "openai_base_url": f"{root}/passage/v1",
                "embedding_dims": dims,
            },
        },
        "llm": {
            "provider": "openai",
            "config": {"model": "never-called", "api_key": "elma-no-llm", "openai_base_url": f"{root}/llm/v1"},
        },
        "history_db_path": os.path.join(data_dir, "history.db"),
    }
    memory = Memory.from_config(config)
    memory.embedding_model = RoleAwareOpenAIEmbedding(memory.embedding_model.config, root)
    memory.llm = ForbiddenLlm()
    return {"vectorStore": "qdrant (local path)", "historyDb": config["history_db_path"]}


def op_add(req):
    # `infer` stays False; true only in the spec that proves the LLM guard fails loudly.
    infer = req.get("infer") is True
    added = memory.add(req["text"], user_id=req["userId"], metadata=req.get("metadata") or {}, infer=infer)
    return {"ids": [item["id"] for item in added["results"]]}


def _item(found):
    return {
        "id": found["id"],
        "memory": found["memory"],
        "score": found.get("score"),
        "metadata": found.get("metadata") or {},
    }


def op_search(req):
    found = memory.search(req["query"], top_k=int(req["limit"]), filters={"user_id": req["userId"]})
    return {"results": [_item(item) for item in found["results"]]}


def op_list(req):
    found = memory.get_all(filters=req["filters"], top_k=int(req["limit"]))
    return {"results": [_item(item) for item in found["results"]]}


def op_delete(req):
    memory.delete(req["memoryId"])
    return {}


def op_reset(req):
    memory.reset()
    return {}


def close_memory():
    if memory is None:
        return
    memory.close()
    client = getattr(memory.vector_store, "client", None)
    if client is not None:
        client.close()


def op_close(req):
    close_memory()
    return {}


OPS = {
    "init": op_init,
    "add": op_add,
    "search": op_search,
    "list": op_list,
    "delete": op_delete,
    "reset": op_reset,
    "close": op_close,
}


def main():
    jsonl_bridge.serve(OPS, ready=lambda: memory is not None, close=close_memory, default_code="MEM0_ERROR", violation=lambda: _violation)


if __name__ == "__main__":
    main()

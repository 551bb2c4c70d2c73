"""`npm run bench:peers`: one peer memory library, driven over JSON lines on stdin/stdout, fed precomputed vectors.

The peers are the real packages, pinned and installed project-locally:
  mem0       Mem0 OSS (mem0ai, scripts/mem0/requirements.txt) on its FAISS vector store, inference off
  langgraph  LangGraph's SqliteStore (langgraph-checkpoint-sqlite, scripts/langgraph/requirements.txt) with its
             sqlite-vec vector search
The caller runs this script with the PYTHONPATH of the chosen peer's installation.

No peer embeds with a model of its own and none calls an LLM: each text arrives with the vector ELMA's embedder
gave it, and the peer's embedder is replaced by a look-up of those vectors (a text without one is an error, never a
silent embedding). Mem0's LLM is replaced by a guard that fails the request if it is ever called.

One request per line, `{"id": n, "op": ..., ...}`; one answer per line, `{"id": n, "ok": true, "result": ...}` or
`{"id": n, "ok": false, "error": {"code": ..., "type": ..., "message": ...}}`. Vectors travel as base64 of
little-endian float32. Operations:

  init   {system, dataDir, dimensions}            opens the peer's store under dataDir
  add    {texts, vectors, userId, deferSave}      adds the texts as memories in one call of the library's batch API
                                                 (Mem0 `add(messages, infer=False)`, LangGraph `batch(PutOp...)`);
                                                 answers {ms}: the library call alone, timed here
  flush  {}                                       Mem0: writes its FAISS index and docstore (see deferSave)
  search {query, vector, userId, limit}           the library's search; answers {ms, texts} (ms: the call alone)
  close  {}                                       closes the store, answers, exits 0

deferSave (Mem0 only): Mem0's FAISS store rewrites its whole index and docstore file after every insert, so adding
n memories costs O(n^2) bytes written. The bench fills a store up to each size with deferSave on (one write at the
flush after the fill) and times only the adds that reach the size, with the store's own save in place.

Library output goes to stderr; stdout carries the protocol alone.
"""

import base64
import os
import struct
import sys
import time

# The shared protocol (scripts/python/jsonl_bridge.py), imported first: it takes stdout and watches the parent.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import jsonl_bridge  # noqa: E402



class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _vector(encoded):
    raw = base64.b64decode(encoded)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


class Vectors:
    """The precomputed vectors of the texts in the current request: the peers' only embedder."""

    def __init__(self):
        self.by_text = {}

    def set(self, texts, encoded):
        if len(texts) != len(encoded):
            raise Failure("BAD_REQUEST", "texts and vectors differ in length")
        self.by_text = {text: _vector(vector) for text, vector in zip(texts, encoded)}

    def get(self, text):
        vector = self.by_text.get(text)
        if vector is None:
            raise Failure("NO_VECTOR", "the library asked for a vector the bench did not give")
        return vector


vectors = Vectors()


class Mem0Peer:
    def __init__(self, data_dir, dims):
        from mem0 import Memory

        config = {
            "vector_store": {
                "provider": "faiss",
                "config": {
                    "collection_name": "elma_bench",
                    "path": os.path.join(data_dir, "faiss"),
                    "distance_strategy": "cosine",
                    "embedding_model_dims": dims,
                },
            },
            # Never called: replaced below by the look-up and the guard. Loopback addresses, dummy keys.
            "embedder": {
                "provider": "openai",
                "config": {"api_key": "elma-no-embedder", "openai_base_url": "http://127.0.0.1:9/v1", "embedding_dims": dims},
            },
            "llm": {
                "provider": "openai",
                "config": {"model": "never-called", "api_key": "elma-no-llm", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": os.path.join(data_dir, "history.db"),
        }
        self.memory = Memory.from_config(config)
        self.memory.embedding_model = LookupEmbedding()
        self.memory.llm = ForbiddenLlm()
        store = self.memory.vector_store
        self._save = store._save
        self._deferred = False

    def add(self, texts, user_id, defer_save):
        store = self.memory.vector_store
        if defer_save:
            store._save = lambda: None
            self._deferred = True
        else:
            self.flush()
        messages = [{"role": "user", "content": text} for text in texts]
        try:
            started = time.perf_counter()
            added = self.memory.add(messages, user_id=user_id, infer=False)
            ms = (time.perf_counter() - started) * 1000
        finally:
            store._save = self._save
        if len(added["results"]) != len(texts):
            raise Failure("ADD_INCOMPLETE", f"Mem0 added {len(added['results'])} of {len(texts)} memories")
        return ms

    def flush(self):
        if self._deferred:
            self._save()
            self._deferred = False

    def search(self, query, user_id, limit):
        started = time.perf_counter()
        found = self.memory.search(query, top_k=limit, filters={"user_id": user_id})
        ms = (time.perf_counter() - started) * 1000
        return ms, [item["memory"] for item in found["results"]]

    def close(self):
        self.flush()
        self.memory.close()


class LookupEmbedding:
    """Stands in for Mem0's embedder (`embed(text, memory_action)`)."""

    def embed(self, text, memory_action=None):
        return vectors.get(text)

    def embed_batch(self, texts, memory_action=None):
        return [vectors.get(text) for text in texts]


class ForbiddenLlm:
    """Stands in for Mem0's LLM: with inference off it must never be called."""

    def __getattr__(self, name):
        def called(*args, **kwargs):
            raise Failure("LLM_INVOKED", f"Mem0 called its LLM ({name}) although inference is off")

        return called


class LanggraphPeer:
    NAMESPACE = ("bench", "memories")

    def __init__(self, data_dir, dims):
        # The store loads the sqlite-vec extension, which this Python's own sqlite3 may not allow; pysqlite3 does.
        import pysqlite3.dbapi2

        sys.modules["sqlite3"] = pysqlite3.dbapi2
        from langgraph.store.sqlite import SqliteStore

        self.context = SqliteStore.from_conn_string(
            os.path.join(data_dir, "store.sqlite"),
            index={"dims": dims, "embed": self._embed, "text_fields": ["text"], "distance_type": "cosine"},
        )
        self.store = self.context.__enter__()
        self.store.setup()
        self.next_key = 0

    @staticmethod
    def _embed(texts):
        return [vectors.get(text) for text in texts]

    def add(self, texts, user_id, defer_save):
        from langgraph.store.base import PutOp

        ops = []
        for text in texts:
            ops.append(PutOp(namespace=self.NAMESPACE + (user_id,), key=f"m{self.next_key}", value={"text": text}))
            self.next_key += 1
        started = time.perf_counter()
        self.store.batch(ops)
        return (time.perf_counter() - started) * 1000

    def flush(self):
        pass

    def search(self, query, user_id, limit):
        started = time.perf_counter()
        found = self.store.search(self.NAMESPACE + (user_id,), query=query, limit=limit)
        ms = (time.perf_counter() - started) * 1000
        return ms, [item.value["text"] for item in found]

    def close(self):
        self.context.__exit__(None, None, None)


PEERS = {"mem0": Mem0Peer, "langgraph": LanggraphPeer}
peer = None


def op_init(req):
    global peer
    os.makedirs(req["dataDir"], exist_ok=True)
    peer = PEERS[req["system"]](req["dataDir"], int(req["dimensions"]))
    return {}


def op_add(req):
    vectors.set(req["texts"], req["vectors"])
    return {"ms": peer.add(req["texts"], req["userId"], req.get("deferSave") is True)}


def op_flush(req):
    peer.flush()
    return {}


def op_search(req):
    vectors.set([req["query"]], [req["vector"]])
    ms, texts = peer.search(req["query"], req["userId"], int(req["limit"]))
    return {"ms": ms, "texts": texts}


def op_close(req):
    if peer is not None:
        peer.close()
    return {}


OPS = {"init": op_init, "add": op_add, "flush": op_flush, "search": op_search, "close": op_close}


def main():
    jsonl_bridge.serve(OPS, ready=lambda: peer is not None, close=lambda: op_close({}), default_code="PEER_ERROR")


if __name__ == "__main__":
    main()

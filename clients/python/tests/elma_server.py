"""Starts a real ELMA for the client's tests: ``elma start`` from this clone's sources (API, worker, projection
and its own Temporal dev server) on free ports with a temporary data folder and the hashing embedder, and mints
tokens with ``elma token``, as an operator would.

Run on its own (``python tests/elma_server.py``) it starts one, prints its address and a token, and stops on Ctrl-C.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[3]
READY_LINE = "Press Ctrl-C to stop."


def elma_command(*args: str) -> List[str]:
    """The ``elma`` CLI from the sources, as ``npm run elma`` runs it (node with tsx), without npm in between so
    that signals reach it."""
    return ["node", "--import", "tsx", str(REPO / "apps" / "cli" / "src" / "main.ts"), *args]


def free_ports(n: int) -> List[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class ElmaServer:
    """An ELMA the tests talk to: its address, and the environment of an `elma` command for its data folder."""

    url: str
    env: Dict[str, str]
    #: Tokens minted when it was set up, by name.
    minted: Dict[str, str]

    def mint(self, *tokens: Sequence[str]) -> List[str]:
        """Mints tokens with ``elma token`` (one argument list each, e.g. ``["--tenant", "acme"]``), concurrently."""
        return self._collect(tokens, [self._spawn_token(args) for args in tokens])

    def _spawn_token(self, args: Sequence[str]) -> "subprocess.Popen[str]":
        return subprocess.Popen(
            elma_command("token", *args), cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    @staticmethod
    def _collect(tokens: Sequence[Sequence[str]], runs: "Sequence[subprocess.Popen[str]]") -> List[str]:
        minted = []
        for args, run in zip(tokens, runs):
            out, err = run.communicate(timeout=300)
            if run.returncode != 0:
                raise RuntimeError(f"elma token {' '.join(args)} failed ({run.returncode}): {err.strip()}")
            minted.append(out.strip())
        return minted

    def stop(self) -> None:
        pass


class RunningElma(ElmaServer):
    """An ELMA someone started (ELMA_TEST_URL, with its data folder in ELMA_TEST_DATA_DIR for minting tokens), to
    iterate on the tests without a start per run; it must run with conftest.ADMISSION's bounds."""

    def __init__(self, url: str, data_dir: str, tokens: Optional[Dict[str, Sequence[str]]] = None) -> None:
        self.url = url.rstrip("/")
        self.env = {**os.environ, "ELMA_DATA_DIR": data_dir}
        self.minted = dict(zip(tokens or {}, self.mint(*(tokens or {}).values())))


class StartedElma(ElmaServer):
    """``elma start`` in a child process; ``tokens`` (name: ``elma token`` arguments) are minted while it comes up,
    into ``minted``."""

    def __init__(
        self, extra_env: Optional[Dict[str, str]] = None, tokens: Optional[Dict[str, Sequence[str]]] = None, ready_timeout: float = 300.0
    ) -> None:
        self.data_dir = tempfile.mkdtemp(prefix="elma-python-client-")
        port, temporal_port, ui_port = free_ports(3)
        self.url = f"http://127.0.0.1:{port}"
        env = dict(os.environ)
        # Its own Temporal dev server: an address or database of another one in this environment is left out.
        for name in ("TEMPORAL_ADDRESS", "ELMA_TEMPORAL_DB_FILE", "ELMA_URL", "ELMA_TOKEN"):
            env.pop(name, None)
        env.update(
            {
                "ELMA_DATA_DIR": self.data_dir,
                "ELMA_PORT": str(port),
                "TEMPORAL_PORT": str(temporal_port),
                "TEMPORAL_UI_PORT": str(ui_port),
                "ELMA_EMBEDDER": "hashing",
                "ELMA_LOG_LEVEL": "warn",
                **(extra_env or {}),
            }
        )
        self.env = env
        self._output: List[str] = []
        # A session of its own: whatever `elma start` starts (the Temporal dev server) can be stopped with it.
        self.process = subprocess.Popen(
            elma_command("start"),
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        tokens = tokens or {}
        try:
            # Tokens are signed with the data folder's secret, which `elma start` writes first thing; minting them
            # meanwhile saves their start-up (each `elma token` loads the CLI) while the Temporal dev server starts.
            minting = [self._spawn_token(args) for args in tokens.values()] if tokens and self._wait_secret(ready_timeout) else []
            self._wait_ready(ready_timeout)
            minted = self._collect(list(tokens.values()), minting) if minting else self.mint(*tokens.values())
            self.minted: Dict[str, str] = dict(zip(tokens, minted))
        except BaseException:
            self.stop()
            raise

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self._output.append(raw.decode("utf-8", "replace"))
            del self._output[:-500]

    def output(self) -> str:
        return "".join(self._output)

    def _wait_secret(self, timeout: float) -> bool:
        """Whether the data folder's JWT secret (64 hex characters) was written before ELMA came up or gave up."""
        path = Path(self.data_dir, "jwt.secret")
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and READY_LINE not in self.output() and time.monotonic() < deadline:
            try:
                if len(path.read_text().strip()) == 64:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while READY_LINE not in self.output():
            if self.process.poll() is not None:
                raise RuntimeError(f"elma start exited with {self.process.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"elma start did not come up in {timeout:g} s:\n{self.output()}")
            time.sleep(0.2)
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=10) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.url}/health did not answer 200 in {timeout:g} s:\n{self.output()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Ctrl-C, as a person would (ELMA stops its worker and Temporal dev server); SIGKILL to what is left of
        the session after 60 s. Removes the data folder."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        self._reader.join(timeout=10)
        shutil.rmtree(self.data_dir, ignore_errors=True)


if __name__ == "__main__":
    elma = StartedElma(tokens={"agent": ["--tenant", "acme", "--sub", "agent-7", "--purposes", "support"]})
    try:
        token = elma.minted["agent"]
        print(f"ELMA_URL={elma.url}\nELMA_TOKEN={token}\nPress Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        elma.stop()

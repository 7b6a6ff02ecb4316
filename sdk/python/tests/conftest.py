"""Fixtures: a real ``tollgate serve`` on loopback, serving the repository's sample policies."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "config" / "samples"
TESTDATA = Path(__file__).resolve().parent / "testdata"
_READY = re.compile(r"decision API on (http://\S+)")
_START_TIMEOUT = 30.0

# Tokens of the authenticated server (at least 16 characters, as tollgate serve requires).
TOKEN_CODING_AGENT = "tok-coding-agent-0123456789"
TOKEN_OTHER_AGENT = "tok-other-agent-0123456789"


def tollgate_binary() -> Path:
    """The tollgate binary: $TOLLGATE_BIN, else bin/tollgate at the repository root."""
    path = Path(os.environ.get("TOLLGATE_BIN") or REPO / "bin" / "tollgate")
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"tollgate binary {path} not found: build it with `go build -o bin/tollgate ./cmd/tollgate` "
                    "(hack/test-python.sh does) or set TOLLGATE_BIN", pytrace=False)
    return path


@dataclass
class Server:
    """A running ``tollgate serve``."""

    url: str
    proc: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)

    def log(self) -> str:
        """What the server wrote to stderr so far."""
        return "".join(self.stderr)

    def decision_record(self, decision_id: str, timeout: float = 5.0) -> dict[str, Any]:
        """The decision log's record of one decision (the server runs with --decision-log, which
        writes records to stderr within 100 ms)."""
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.stderr):
                if line.startswith("{") and f'"decision_id":"{decision_id}"' in line:
                    return dict(json.loads(line))
            if time.monotonic() > deadline:
                raise AssertionError(f"no decision log record for {decision_id}:\n{self.log()}")
            time.sleep(0.05)

    def records(self, **match: str) -> list[dict[str, Any]]:
        """Every decision log record so far whose fields equal match."""
        out = []
        for line in list(self.stderr):
            if line.startswith("{"):
                rec = json.loads(line)
                if all(rec.get(k) == v for k, v in match.items()):
                    out.append(rec)
        return out


def start_server(*args: str) -> Server:
    """Starts ``tollgate serve`` on a free loopback port and waits until it says where it
    listens; fails the test (with the server's output) when it does not start."""
    cmd = [str(tollgate_binary()), "serve", "--bind-address", "127.0.0.1:0", "--watch=false", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = _READY.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(_START_TIMEOUT)
    if not found:
        proc.kill()
        proc.wait(5)
        pytest.fail(f"tollgate serve did not start within {_START_TIMEOUT}s (exit code {proc.returncode}):\n"
                    f"$ {' '.join(cmd)}\n{''.join(lines)}", pytrace=False)
    return Server(url=found[0], proc=proc, stderr=lines)


def stop_server(server: Server) -> None:
    """Stops the server and fails when it had died on its own."""
    died = server.proc.poll()
    server.proc.terminate()
    try:
        server.proc.wait(10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait(5)
    if died is not None:
        pytest.fail(f"tollgate serve exited early with code {died}:\n{server.log()}", pytrace=False)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """``tollgate serve -f config/samples --decision-log`` without authentication."""
    s = start_server("-f", str(SAMPLES), "--decision-log")
    yield s
    stop_server(s)


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``tollgate serve -f config/samples --token-file``: TOKEN_CODING_AGENT authenticates the
    ServiceAccount the coding-agent passport lists, TOKEN_OTHER_AGENT one it does not."""
    tokens = tmp_path_factory.mktemp("auth") / "tokens"
    tokens.write_text(f"{TOKEN_CODING_AGENT} coding-agent\n{TOKEN_OTHER_AGENT} other-agent\n")
    s = start_server("-f", str(SAMPLES), "--token-file", str(tokens))
    yield s
    stop_server(s)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, server: Server) -> Server:
    """The environment an opted-in pod gets, pointing at the unauthenticated server."""
    monkeypatch.setenv("TOLLGATE_URL", server.url)
    monkeypatch.setenv("TOLLGATE_PASSPORT", "coding-agent")
    monkeypatch.delenv("TOLLGATE_TOKEN_FILE", raising=False)
    return server


def wait_for(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    """Polls predicate until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)

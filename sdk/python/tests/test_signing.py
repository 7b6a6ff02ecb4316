"""Signed decisions: a real ``tollgate serve --signing-keys`` signs every answer, the client keeps
the signature, and ``tollgate verify`` accepts the decision as received and refuses it changed."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

from tollgate import Client

from conftest import SAMPLES, Server, start_server, stop_server, tollgate_binary


def _verify(jwks_url: str, decision: dict, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decision))
    return subprocess.run(
        [str(tollgate_binary()), "verify", "--jwks", jwks_url, str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )


def test_signed_decision_verifies(tmp_path: Path) -> None:
    keys = subprocess.run([str(tollgate_binary()), "keygen", "--kid", "sdk-test"],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    key_file = tmp_path / "keys.json"
    key_file.write_text(keys)
    server = start_server("-f", str(SAMPLES), "--signing-keys", str(key_file))
    try:
        raw: list[dict] = []
        with Client(url=server.url, passport="coding-agent") as c:
            d = c.decide("bash", {"command": "ls && rm -rf /"})
            # The same kind of request over plain HTTP, to keep a decision exactly as the endpoint sent it.
            req = urllib.request.Request(server.url + "/v1/decide", method="POST",
                                         data=json.dumps({"passport": "coding-agent", "tool_name": "bash",
                                                          "tool_input": {"command": "ls"}}).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 (loopback test server)
                raw.append(json.load(resp))
        assert d.denied and d.signature is not None
        assert d.signature["alg"] == "EdDSA" and d.signature["kid"] == "sdk-test" and len(d.signature["value"]) == 86

        jwks = server.url + "/.well-known/jwks.json"
        ok = _verify(jwks, raw[0], tmp_path)
        assert ok.returncode == 0, ok.stderr
        tampered = dict(raw[0], allow=False, decision="deny")
        bad = _verify(jwks, tampered, tmp_path)
        assert bad.returncode == 1, (bad.stdout, bad.stderr)
    finally:
        stop_server(server)


def test_unsigned_decision_has_no_signature(env: Server) -> None:
    with Client() as c:
        d = c.decide("bash", {"command": "ls"})
    assert d.signature is None

"""The shell tool the adapter tests give each framework's agent, and the three calls its scripted
model asks for: a dangerous one Tollgate denies, a benign one it allows, and one it rewrites."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The scripted model asks for these three calls, in this order.
DANGEROUS = {"command": "rm -rf precious"}
BENIGN = {"command": "ls"}
REWRITTEN = {"command": "git --version", "env": {"PAGER": "less"}}
# What the modify policy (config/samples, git.hygiene.v1) turns REWRITTEN into.
REWRITTEN_TO = {"command": "git --no-pager --version"}


@dataclass
class Sandbox:
    """A directory holding a file the dangerous call would delete, and a record of every
    command the tool really ran there."""

    root: Path
    ran: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def make(cls, tmp: Path) -> Sandbox:
        """A sandbox in tmp with the file ``precious`` in it."""
        (tmp / "precious").write_text("keep me\n")
        return cls(root=tmp)

    def bash(self, command: str, env: dict[str, str] | None = None) -> str:
        """The tool function: runs ``command`` in the sandbox and returns its output."""
        self.ran.append({"command": command, "env": env})
        proc = subprocess.run(
            command, shell=True, cwd=self.root, capture_output=True, text=True, timeout=30,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root), **(env or {})},
        )
        return (proc.stdout + proc.stderr).strip() or f"exit {proc.returncode}"

    def assert_outcome(self) -> None:
        """The dangerous call never ran (its file is still there), the benign one ran, and the
        rewritten one ran with the rewritten arguments only."""
        assert (self.root / "precious").exists(), "the dangerous command ran: precious was deleted"
        assert [r["command"] for r in self.ran] == ["ls", REWRITTEN_TO["command"]], self.ran
        assert self.ran[1]["env"] is None, "the modify policy removes env, but the tool got it"

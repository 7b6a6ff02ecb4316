"""The bearer token: a static string, or a projected ServiceAccount token file that the kubelet
rotates (it swaps a symlink, so the file's inode and times change)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from ._errors import Unavailable

# A token file is small; anything larger is not a token.
_MAX_TOKEN_BYTES = 64 << 10


@dataclass(frozen=True)
class _Stamp:
    ino: int
    dev: int
    size: int
    mtime_ns: int
    ctime_ns: int


class TokenSource:
    """Reads the token, re-reading the file only when it changed (inode, size, mtime or ctime)
    or when the caller forces it (after a 401). Safe for concurrent use."""

    def __init__(self, token_file: str | None, token: str | None) -> None:
        self.token_file = token_file or None
        self._static = (token or "").strip() or None
        self._lock = threading.Lock()
        self._stamp: _Stamp | None = None
        self._cached: str | None = None

    def get(self, *, force: bool = False) -> str | None:
        """The current token (None when there is none). Raises Unavailable when the token file
        cannot be read: without it the endpoint cannot be asked."""
        if self.token_file is None:
            return self._static
        path = self.token_file
        try:
            st = os.stat(path)
        except OSError as e:
            raise Unavailable(f"reading token file {path}: {e.strerror or e}") from e
        stamp = _Stamp(st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            if not force and stamp == self._stamp and self._cached is not None:
                return self._cached
            try:
                with open(path, "rb") as f:
                    data = f.read(_MAX_TOKEN_BYTES + 1)
            except OSError as e:
                raise Unavailable(f"reading token file {path}: {e.strerror or e}") from e
            if len(data) > _MAX_TOKEN_BYTES:
                raise Unavailable(f"token file {path} is larger than {_MAX_TOKEN_BYTES} bytes")
            token = data.decode("utf-8", errors="replace").strip()
            if not token:
                # The kubelet writes a new token atomically, so an empty file is a mistake: do not
                # cache it, so that the next call reads the file again.
                raise Unavailable(f"token file {path} is empty")
            self._stamp, self._cached = stamp, token
            return token

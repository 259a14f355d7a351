"""Who may use a server: anyone on this machine when it listens on the loopback only (the default), else
only the holder of its bearer token. A server on any other address refuses to start without one."""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from pathlib import Path

from cudasmith.errors import UsageError

# A fresh token: 32 random bytes, URL-safe (43 characters). A token read from a file must be at least
# MIN_TOKEN_CHARS long: a short one is guessed.
TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 16
# A token file that others may read is no secret: refused, as ssh refuses such a key.
PRIVATE_MODE = 0o600


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback (127.0.0.0/8, ::1, localhost); a name that is not an
    address counts as reachable from elsewhere."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_token(host: str, token_file: Path | None) -> tuple[str | None, bool]:
    """The bearer token a server on `host` requires, and whether it was made now: the one in `token_file`,
    or a fresh one written there (mode 0600) when the file does not exist; None (no token) only on the
    loopback without a token file. A UsageError refuses a server on another address without one."""
    if token_file is None:
        if is_loopback(host):
            return None, False
        raise UsageError(
            f"refusing to listen on {host} without a bearer token: add --token-file FILE "
            "(a FILE that does not exist gets a fresh token, mode 0600)"
        )
    if not token_file.exists():
        token = secrets.token_urlsafe(TOKEN_BYTES)
        descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
        with os.fdopen(descriptor, "w") as file:
            file.write(token + "\n")
        return token, True
    if token_file.stat().st_mode & 0o077:
        raise UsageError(f"{token_file} may be read by other users; chmod 600 {token_file}")
    token = token_file.read_text().strip()
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise UsageError(
            f"{token_file}: a token of at least {MIN_TOKEN_CHARS} characters, one line, is expected"
        )
    return token, False


def authorized(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries the token, compared in constant time (how much of a guess
    was right must not show in how long the answer takes)."""
    return hmac.compare_digest((header or "").encode(), f"Bearer {token}".encode())

"""Running the server: the service over its executor, the HTTP API on uvicorn, on a socket bound before
the server says where it listens (so `--port 0` works, and a caller reads the port from that line)."""

from __future__ import annotations

import socket
from collections.abc import Callable

from cudasmith.errors import UsageError
from cudasmith.serve.service import JudgeService

# How long a stopping server waits for requests in progress (a `?wait=S` among them) before it closes.
GRACEFUL_S = 5.0


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (0: a free port), reusable at once after a server is killed."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(socket.SOMAXCONN)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """The server's URL as a client writes it."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run_server(
    service: JudgeService, host: str, port: int, token: str | None, listening: Callable[[str], None]
) -> None:
    """Serve `service` on `host`:`port` until SIGINT or SIGTERM; `listening(url)` once it listens."""
    import uvicorn

    from cudasmith.serve.app import make_app

    sock = bind(host, port)
    config = uvicorn.Config(
        make_app(service, token),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(GRACEFUL_S),
    )
    listening(url_of(sock))
    uvicorn.Server(config).run(sockets=[sock])

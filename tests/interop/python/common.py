"""What every Python interop server shares: the fixed answers, the record
file for the `slow` tool, and serving an ASGI app on a loopback port the
kernel picks (printing `listening PORT` first on stdout)."""

import base64
import os
import socket
import sys

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode()

NAMES = ["alice", "albert", "bob"]
ITEMS = ["apple", "apricot", "banana"]

README = "rho interop server: every SDK exposes the same surface."

TRANSPORTS = ("stdio", "http-sse", "http-json", "stateless")


def suggest(values, prefix):
    return [v for v in values if v.startswith(prefix or "")]


def record(line):
    """Appends `line` to the file named by INTEROP_RECORD (if set)."""
    path = os.environ.get("INTEROP_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    print(f"record: {line}", file=sys.stderr, flush=True)


def transport_arg():
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport not in TRANSPORTS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(TRANSPORTS)}")
    return transport


def serve_http(app):
    """Serves `app` on 127.0.0.1, port 0, after printing `listening PORT`."""
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    anyio.run(lambda: server.serve(sockets=[sock]))

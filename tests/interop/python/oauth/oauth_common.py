"""What both OAuth fixtures share (stdlib, anyio and uvicorn only, which
every interop venv has): their arguments, the token families behind
refresh-token rotation with reuse detection, the request log the tests
read, a control path, and serving on a loopback port.

    --port N     bind 127.0.0.1:N (default 0: a port the kernel picks; a
                 test that restarts the server passes the port it had)
    --log FILE   append one JSON line per authorization-server request
    --ttl SECS   access-token lifetime (default 3600)
    --refresh-delay SECS
                 hold every refresh_token grant this long before answering
                 (default 0), so that concurrent refreshes surely overlap

Each log line is an object with `endpoint` (`register`, `authorize`,
`token`, `revoke`), `status`, and for the token endpoint `grant_type`,
`client_id`, `client_id_in` (`body`, `basic`, `body+basic` or `none`:
where the request carried it) and `error` (the answer's OAuth error, if
any). A refresh token presented twice is logged as `reuse: true` too.

`POST /control/expire` drops every access token (the resource server
then answers 401 to them), for a refresh driven by the server's refusal
rather than by rho's clock.
"""

import argparse
import base64
import json
import secrets
import socket
import sys
import time
from urllib.parse import parse_qs, unquote

WATCHED = {"/register": "register", "/authorize": "authorize", "/token": "token", "/revoke": "revoke"}


def args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--refresh-delay", type=float, default=0)
    return parser.parse_args()


def bind(port):
    """A listening socket on 127.0.0.1:`port`, and its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock, sock.getsockname()[1]


def serve(app, sock):
    """Serves `app` on `sock` after printing `listening PORT`."""
    import anyio
    import uvicorn

    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    anyio.run(lambda: server.serve(sockets=[sock]))


class Log:
    """The request log: JSON lines to the file of `--log` and to stderr."""

    def __init__(self, path):
        self.path = path

    def write(self, entry):
        line = json.dumps(entry, sort_keys=True)
        print(f"oauth: {line}", file=sys.stderr, flush=True)
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")


class Families:
    """Token families: every access and refresh token descends from one
    authorization code. A rotated refresh token is remembered; presented
    again, it is reuse (RFC 9700 §4.14.2): the whole family is revoked.

    `family_of` holds the live tokens, by value, with their family;
    `rotated` the refresh tokens already exchanged, with theirs."""

    def __init__(self):
        self.family_of = {}
        self.rotated = {}
        self.reused = []

    @staticmethod
    def new():
        return secrets.token_hex(8)

    def add(self, token, family):
        self.family_of[token] = family

    def rotate(self, refresh_token):
        """Marks `refresh_token` used; its family."""
        family = self.family_of.pop(refresh_token, None)
        if family is not None:
            self.rotated[refresh_token] = family
        return family

    def reuse(self, refresh_token):
        """The family of `refresh_token` when it was rotated already (a
        reuse; remembered for the log), else None."""
        family = self.rotated.get(refresh_token)
        if family is not None:
            self.reused.append(refresh_token)
        return family

    def members(self, family):
        return [t for t, f in self.family_of.items() if f == family]

    def drop(self, token):
        self.family_of.pop(token, None)


def form_of(body):
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def basic_client_id(headers):
    auth = headers.get("authorization", "")
    if not auth.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(auth[6:]).decode("utf-8")
    except Exception:
        return "<unreadable>"
    return unquote(decoded.split(":", 1)[0])


def logged(app, log, families, expire_all, refresh_delay=0):
    """`app` behind the request log and the control path; a refresh is
    held `refresh_delay` seconds first."""
    import anyio

    async def wrapper(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        path = scope["path"]
        if path == "/control/expire" and scope["method"] == "POST":
            expire_all()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        endpoint = WATCHED.get(path)
        if endpoint is None:
            return await app(scope, receive, send)
        # Read the body once, and hand it on unchanged.
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        answer = {"status": None, "body": b""}
        logged_already = False

        def log_answer():
            """Logs the exchange once: before the answer's last byte goes
            out, so a test that has the answer finds the line."""
            nonlocal logged_already
            if logged_already:
                return
            logged_already = True
            log.write(entry_of(endpoint, scope, body, answer, len(families.reused) > reused_before))

        async def capture(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["body"] += message.get("body", b"")
                if not message.get("more_body"):
                    log_answer()
            await send(message)

        if endpoint == "token" and refresh_delay and form_of(body).get("grant_type") == "refresh_token":
            await anyio.sleep(refresh_delay)
        reused_before = len(families.reused)
        await app(scope, replay, capture)
        log_answer()

    return wrapper


def entry_of(endpoint, scope, body, answer, reused):
    """The log entry of one exchange with `endpoint`: its request (`scope`,
    `body`) and `answer` (`status`, `body`); `reused` when it presented a
    rotated refresh token."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    entry = {"endpoint": endpoint, "status": answer["status"], "at": time.time()}
    if endpoint == "authorize":
        query = form_of(scope.get("query_string", b""))
        entry["client_id"] = query.get("client_id")
        entry["redirect_uri"] = query.get("redirect_uri")
    elif endpoint == "register":
        try:
            entry["client_id"] = json.loads(answer["body"]).get("client_id")
            entry["token_endpoint_auth_method"] = json.loads(answer["body"]).get(
                "token_endpoint_auth_method"
            )
        except Exception:
            pass
    else:
        form = form_of(body)
        in_body = form.get("client_id")
        in_basic = basic_client_id(headers)
        entry["grant_type"] = form.get("grant_type")
        entry["client_id"] = in_body or in_basic
        entry["client_id_in"] = "+".join(w for w, v in (("body", in_body), ("basic", in_basic)) if v) or "none"
        if endpoint == "token":
            entry["reuse"] = reused
        try:
            entry["error"] = json.loads(answer["body"]).get("error")
        except Exception:
            entry["error"] = None
    return entry

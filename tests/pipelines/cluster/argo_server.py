"""A loopback stand-in for the Argo Server's HTTP API that records every call.

Enough of the API for `openforge deploy`, `submit` and `status`, so their tests can check
the exact requests (method, path, Authorization header, JSON body) and drive the
answers (not found, conflict on a stale resourceVersion, 401, 403).

Endpoints: ``GET|POST|PUT /api/v1/workflow-templates/{ns}[/{name}]``,
``GET|POST|PUT /api/v1/cron-workflows/{ns}[/{name}]``, ``GET|POST /api/v1/workflows/{ns}[/{name}]``.

Limits (what it does not do, so a passing test does not claim it):
- It validates nothing about the manifests (the schema, Hera and lint checks do) and runs
  nothing: a submitted workflow stays as created until a test sets its ``status``.
- Any other endpoint (lint, submit-from-template, logs, watch streams, archived
  workflows) answers 501 with the path, so a new call is noticed, not silently accepted.
- Authentication is one fixed token (401 for any other); ``forbidden`` paths answer 403.
  There is no RBAC, SSO, client certificates or TLS (plain HTTP on 127.0.0.1).
- resourceVersion is a counter per object; ``generateName`` gets a 5-character suffix
  from a counter, not random letters; no namespace must exist beforehand.
- Error bodies carry ``code`` and ``message`` like grpc-gateway's; nothing else of them.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_COLLECTIONS = {"workflow-templates": "template", "cron-workflows": "cronWorkflow", "workflows": "workflow"}
_PATH = re.compile(r"^/api/v1/(workflow-templates|cron-workflows|workflows)/([^/]+)(?:/([^/]+))?$")


@dataclass
class Call:
    method: str
    path: str
    authorization: str | None
    body: dict[str, Any] | None


@dataclass
class RecordingArgoServer:
    """Start with ``start()``; ``url`` is the base URL; ``calls`` lists what was asked, in order."""

    token: str = "secret-token"
    forbidden: set[str] = field(default_factory=set)  # paths answered 403
    calls: list[Call] = field(default_factory=list)
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)  # (collection, ns, name)
    _suffix: Any = field(default_factory=lambda: itertools.count(1))

    def start(self) -> "RecordingArgoServer":
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def writes(self) -> list[Call]:
        return [c for c in self.calls if c.method in ("POST", "PUT")]

    # -- the API -----------------------------------------------------------------------
    def answer(self, call: Call) -> tuple[int, dict[str, Any]]:
        if call.authorization != f"Bearer {self.token}":
            return 401, {"code": 16, "message": "token not valid"}
        if call.path in self.forbidden:
            return 403, {"code": 7, "message": "permission denied"}
        match = _PATH.match(call.path.split("?")[0])
        if not match:
            return 501, {"code": 12, "message": f"{call.method} {call.path} is not implemented by the recording server"}
        collection, namespace, name = match.groups()
        key = _COLLECTIONS[collection]
        if call.method == "GET" and name:
            found = self.objects.get((collection, namespace, name))
            return (200, found) if found else (404, {"code": 5, "message": f"{collection} {name!r} not found"})
        if call.method == "POST" and not name and call.body:
            return self._create(collection, namespace, call.body[key])
        if call.method == "PUT" and name and call.body:
            return self._update(collection, namespace, name, call.body[key])
        return 501, {"code": 12, "message": f"{call.method} {call.path} is not implemented by the recording server"}

    def _create(self, collection: str, namespace: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        obj = json.loads(json.dumps(obj))
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            meta["name"] = f"{meta['generateName']}{next(self._suffix):05d}"
        if (collection, namespace, meta["name"]) in self.objects:
            return 409, {"code": 6, "message": f"{collection} {meta['name']!r} already exists"}
        meta.update(namespace=namespace, resourceVersion="1")
        self.objects[(collection, namespace, meta["name"])] = obj
        return 200, obj

    def _update(self, collection: str, namespace: str, name: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        current = self.objects.get((collection, namespace, name))
        if current is None:
            return 404, {"code": 5, "message": f"{collection} {name!r} not found"}
        version = current["metadata"]["resourceVersion"]
        if obj.get("metadata", {}).get("resourceVersion") != version:
            return 409, {"code": 10, "message": f"the object has been modified (resourceVersion is {version})"}
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["resourceVersion"] = str(int(version) + 1)
        self.objects[(collection, namespace, name)] = obj
        return 200, obj


def _handler(server: RecordingArgoServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            call = Call(self.command, self.path, self.headers.get("Authorization"), body)
            server.calls.append(call)
            status, answer = server.answer(call)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _serve

        def log_message(self, *args: object) -> None:
            pass

    return Handler

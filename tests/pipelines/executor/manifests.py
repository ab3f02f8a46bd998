"""Small hand-written Argo manifests whose containers are tiny Python programs."""

from __future__ import annotations

import sys
from typing import Any

# Appends argv[2] as a line to the file argv[1].
APPEND = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"

# An HTTP server on `--port N` that records its pid in argv[-1] and each request path in
# the file named by env CALLS (when set); answers `pong:<path>`.
SERVER = r"""
import http.server, os, pathlib, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
pathlib.Path(sys.argv[-1]).write_text(str(os.getpid()))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if os.environ.get("CALLS"):
            with open(os.environ["CALLS"], "a") as fh:
                fh.write(self.path + "\n")
        body = f"pong:{self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""

# GET argv[1] (retrying while the server starts) and write the body to argv[2].
FETCH = r"""
import pathlib, sys, time, urllib.request
for _ in range(100):
    try:
        body = urllib.request.urlopen(sys.argv[1], timeout=2).read()
        break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit(f"no answer from {sys.argv[1]}")
pathlib.Path(sys.argv[2]).parent.mkdir(parents=True, exist_ok=True)
pathlib.Path(sys.argv[2]).write_bytes(body)
"""


def pod(name: str, code: str, *args: str, env: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A container template running ``python -c code args...``."""
    container: dict[str, Any] = {"image": "python:3.12", "command": [sys.executable, "-c", code], "args": list(args)}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    container.update(fields.pop("container", {}))
    return {"name": name, "container": container, **fields}


def inputs(*names: str, **defaults: str) -> dict[str, Any]:
    params = [{"name": n} for n in names] + [{"name": k, "value": v} for k, v in defaults.items()]
    return {"parameters": params}


def task(name: str, template: str, depends: str | None = None, **fields: Any) -> dict[str, Any]:
    params = fields.pop("params", None)
    out: dict[str, Any] = {"name": name, "template": template, **fields}
    if depends:
        out["depends"] = depends
    if params:
        out["arguments"] = {"parameters": [{"name": k, "value": v} for k, v in params.items()]}
    return out


def dag(name: str, *tasks: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "dag": {"tasks": list(tasks)}, **fields}


def workflow(*templates: dict[str, Any], parameters: dict[str, str] | None = None, **spec: Any) -> list[dict[str, Any]]:
    """One WorkflowTemplate whose entrypoint is the first template."""
    return [
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "WorkflowTemplate",
            "metadata": {"name": "test-flow"},
            "spec": {
                "entrypoint": templates[0]["name"],
                "arguments": {"parameters": [{"name": k, "value": v} for k, v in (parameters or {}).items()]},
                "templates": list(templates),
                **spec,
            },
        }
    ]

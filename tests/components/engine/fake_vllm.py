"""A stand-in for ``python -m vllm.entrypoints.openai.api_server``, for what real vLLM cannot
show here in seconds: an engine that dies while loading, one that serves another version,
one that stops by itself, the exact argv and working directory the step used. It parses
the server's arguments and answers /health and /v1/models in vLLM's shapes (root = the
model path as given, LoRA cards with a parent); it generates nothing.

Everything real vLLM can show runs against real vLLM (its CPU build, ``make vllm``):
tests/components/engine/test_vllm_real.py and test_vllm_real_serve.py. What neither shows
here: GPU-only behaviour (tensor parallelism, bfloat16 kernels, gpu_memory_utilization as
a share of GPU memory).

Knobs (environment): FAKE_VLLM_ARGV_FILE (write argv and cwd there as JSON),
FAKE_VLLM_EXIT_CODE (exit at once with it), FAKE_VLLM_EXIT_AFTER_S (serve, then exit 0),
FAKE_VLLM_ROOT (report this root instead of the model path).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _cards(args: argparse.Namespace) -> list[dict]:
    if not (Path(args.model) / "config.json").is_file():
        sys.exit(f"fake vllm: {Path.cwd() / args.model} has no config.json")
    card = {"object": "model", "created": 0, "owned_by": "vllm", "max_model_len": args.max_model_len, "permission": [{}]}
    cards = [{**card, "id": args.served_model_name, "root": os.environ.get("FAKE_VLLM_ROOT", args.model), "parent": None}]
    for module in args.lora_modules or []:
        lora = json.loads(module)
        if not (Path(lora["path"]) / "adapter_config.json").is_file():
            sys.exit(f"fake vllm: adapter {lora['path']} has no adapter_config.json")
        cards.append({**card, "id": lora["name"], "root": lora["path"], "parent": lora["base_model_name"]})
    return cards


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", dest="module", required=True, choices=["vllm.entrypoints.openai.api_server"])
    parser.add_argument("--model", required=True)
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--served-model-name")
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--lora-modules", nargs="+")
    args, _ = parser.parse_known_args()
    if os.environ.get("FAKE_VLLM_ARGV_FILE"):
        Path(os.environ["FAKE_VLLM_ARGV_FILE"]).write_text(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}))
    if os.environ.get("FAKE_VLLM_EXIT_CODE"):
        sys.exit(int(os.environ["FAKE_VLLM_EXIT_CODE"]))
    body = json.dumps({"object": "list", "data": _cards(args)}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            payload = body if self.path == "/v1/models" else b""
            self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    if os.environ.get("FAKE_VLLM_EXIT_AFTER_S"):
        threading.Timer(float(os.environ["FAKE_VLLM_EXIT_AFTER_S"]), server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()

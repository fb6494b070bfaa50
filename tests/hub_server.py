"""A small Hugging Face Hub-compatible file server on 127.0.0.1 for the Hub-lookup tests.

It answers what huggingface_hub asks for config.json and safetensors headers:
HEAD/GET /{owner}/{name}/resolve/{revision}/{path} with X-Repo-Commit, ETag and Range support,
and the X-Error-Code headers the client maps to RepositoryNotFound / GatedRepo / EntryNotFound.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file's header (8-byte length + JSON) with no tensor data after it."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "F8_E4M3": 1}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        end = offset + count * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, end]}
        offset = end
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


class HubState:
    def __init__(self) -> None:
        self.repos: dict[str, dict[str, bytes]] = {}
        self.gated: set[str] = set()
        self.requests: list[str] = []

    def add(self, repo_id: str, files: dict[str, bytes | dict[str, Any]]) -> None:
        self.repos[repo_id] = {
            path: content if isinstance(content, bytes) else json.dumps(content).encode()
            for path, content in files.items()
        }


def _handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

        def _route(self) -> tuple[str, str] | None:
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                return None
            return f"{parts[0]}/{parts[1]}", "/".join(parts[4:])

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _serve(self, body: bool) -> None:
            state.requests.append(f"{self.command} {self.path}")
            route = self._route()
            if route is None:
                return self._error(404, "EntryNotFound")
            repo_id, path = route
            if repo_id in state.gated:
                return self._error(401, "GatedRepo")
            if repo_id not in state.repos:
                return self._error(401, "RepoNotFound")
            content = state.repos[repo_id].get(path)
            if content is None:
                return self._error(404, "EntryNotFound")
            status, payload = 200, content
            wanted = self.headers.get("Range")
            if wanted and wanted.startswith("bytes="):
                start_text, _, end_text = wanted[6:].partition("-")
                start = int(start_text)
                end = min(int(end_text) if end_text else len(content) - 1, len(content) - 1)
                status, payload = 206, content[start : end + 1]
            self.send_response(status)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", '"' + hashlib.sha256(content).hexdigest() + '"')
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if body:
                self.wfile.write(payload)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

    return Handler


@contextmanager
def hub_server() -> Iterator[tuple[str, HubState]]:
    state = HubState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

"""A release site for the weights tests: a real HTTP server on 127.0.0.1 (the standard
library's, with Range support, cuts, Google Drive's confirmation page) and random-init
checkpoints in the research releases' key layouts."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import torch

from s2r.encoders.backends.checkpoint import build_architecture
from tests.helpers.state_dicts import synthetic as random_state_dict


class Site:
    """What the server serves and how it misbehaves (reset per test)."""

    def __init__(self):
        self.files: dict = {}       # "/name" -> bytes
        self.cut_once: set = set()  # paths whose first GET stops half-way
        self.cut_always: set = set()
        self.drive: set = set()     # paths answered with Drive's confirmation page
        self.pages: dict = {}       # "/name" -> an HTML page served instead of the file
        self.no_range = False       # a server that ignores Range (always sends everything)
        self.log: list = []         # (path, Range header)


class Handler(BaseHTTPRequestHandler):
    site: Site = Site()

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        site = self.site
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        path = url.path
        site.log.append((self.path, self.headers.get("Range")))
        if path in site.drive:
            page = ("<html><head><title>Google Drive - Virus scan warning</title></head><body>"
                    "<form id=\"download-form\" action=\"/download\" method=\"get\">"
                    "<input type=\"submit\" value=\"Download anyway\"/>"
                    f"<input type=\"hidden\" name=\"id\" value=\"{path[1:]}\">"
                    "<input type=\"hidden\" name=\"export\" value=\"download\">"
                    "<input type=\"hidden\" name=\"confirm\" value=\"t\">"
                    "<input type=\"hidden\" name=\"uuid\" value=\"abc-123\"></form></body>"
                    "</html>").encode()
            return self._send(200, page, "text/html; charset=utf-8")
        if path in site.pages:
            return self._send(200, site.pages[path].encode(), "text/html")
        if path == "/download" and query.get("confirm") == "t" and query.get("uuid"):
            path = "/" + query.get("id", "")
        if path not in site.files:
            return self._send(404, b"not found", "text/plain")
        data = site.files[path]
        start = 0
        ranged = self.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and ranged.endswith("-") and not site.no_range:
            start = int(ranged[6:-1])
            if start >= len(data):
                return self._send(416, b"", "text/plain")
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if path in site.cut_always or path in site.cut_once:
            site.cut_once.discard(path)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def _send(self, code, body, kind):
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """Run the server in a thread; yield its base URL (``http://127.0.0.1:PORT``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def synthetic(arch: str, seed: int) -> dict:
    """Random values with ``build_architecture(arch)``'s exact keys and shapes."""
    return random_state_dict(lambda: build_architecture(arch), seed)


def saved(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def vip_checkpoint() -> bytes:
    """A VIP-shaped (ResNet50, fc 1024) random-init release file."""
    sd = synthetic("resnet50-fc1024", 1)
    return saved({"vip": {f"module.convnet.{k}": v for k, v in sd.items()}})

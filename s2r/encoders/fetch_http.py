"""Streaming one URL into a ``.part`` file: resumable (HTTP Range), Google Drive's
"can't scan for viruses" confirmation page followed, progress reported to a
:data:`~s2r.progress.ProgressCallback` (bytes), one-line errors.

Only the standard library (:mod:`urllib.request`) is used. A cut connection is resumed from
the bytes already on disk (``Range: bytes=N-``) a few times within one call; the ``.part``
file stays behind when every attempt fails, so the next run continues where this one stopped.
"""

from __future__ import annotations

import html
import http.client
import http.cookiejar
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Optional

from s2r.errors import EncoderError
from s2r.inputs import is_integer_text
from s2r.progress import report

CHUNK = 1 << 20
TIMEOUT_S = 30.0
RETRIES = 3
_HTML_LIMIT = 2 << 20
_USER_AGENT = "s2r-weights/1 (+python urllib)"


class _Cut(Exception):
    """The connection ended before the file did (resumable)."""


def _opener() -> urllib.request.OpenerDirector:
    # cookies: older Google Drive pages set a download_warning cookie the confirm step needs
    return urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc or url


def _open(opener, url: str, start: int, timeout: float):
    """The response for ``url`` from byte ``start`` (EncoderError on HTTP/network errors;
    a 416 response is returned, not raised)."""
    headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        return opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and start:
            return exc
        raise EncoderError(f"HTTP {exc.code} {exc.reason} from {url}") from None
    except urllib.error.URLError as exc:
        raise EncoderError(f"cannot reach {_host(url)} ({exc.reason}); check the network, or "
                           "set S2R_WEIGHTS_MIRROR to a mirror that has the file") from None
    except (OSError, http.client.HTTPException) as exc:
        raise EncoderError(f"cannot reach {_host(url)} ({type(exc).__name__}: {exc})") from None


def drive_confirm_url(page: str, base_url: str) -> Optional[str]:
    """The URL behind Google Drive's "can't scan this file for viruses" page, or ``None``.

    The current page is a form (``id="download-form"``, hidden ``id``/``export``/``confirm``/
    ``uuid`` inputs, GET to drive.usercontent.google.com); older pages link to
    ``...&confirm=TOKEN``.
    """
    form = re.search(r"<form[^>]*id=[\"']download-form[\"'][^>]*>(.*?)</form>", page,
                     re.S | re.I)
    if form:
        action = re.search(r"action=[\"']([^\"']+)[\"']", form.group(0), re.I)
        fields = {}
        for tag in re.findall(r"<input[^>]*>", form.group(1), re.I):
            name = re.search(r"name=[\"']([^\"']+)[\"']", tag, re.I)
            value = re.search(r"value=[\"']([^\"']*)[\"']", tag, re.I)
            if name and re.search(r"type=[\"']hidden[\"']", tag, re.I):
                text = value.group(1) if value else ""
                fields[html.unescape(name.group(1))] = html.unescape(text)
        if action:
            target = urllib.parse.urljoin(base_url, html.unescape(action.group(1)))
            return f"{target}?{urllib.parse.urlencode(fields)}" if fields else target
    link = re.search(r"href=[\"']([^\"']*confirm=[0-9A-Za-z_\-]+[^\"']*)[\"']", page)
    if link:
        return urllib.parse.urljoin(base_url, html.unescape(link.group(1)))
    token = re.search(r"confirm=([0-9A-Za-z_\-]+)", page)
    if token:
        parts = urllib.parse.urlsplit(base_url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        query["confirm"] = token.group(1)
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    return None


def _open_file(opener, url: str, start: int, timeout: float):
    """Like :func:`_open`, following HTML confirmation pages (at most 3) to the file."""
    for _ in range(4):
        response = _open(opener, url, start, timeout)
        kind = (response.headers.get("Content-Type") or "").lower()
        if "text/html" not in kind:
            return response
        page = response.read(_HTML_LIMIT).decode("utf-8", "replace")
        response.close()
        target = drive_confirm_url(page, response.geturl() or url)
        if target is None or target == url:
            title = re.search(r"<title>(.*?)</title>", page, re.S | re.I)
            what = f" ({html.unescape(title.group(1)).strip()[:80]})" if title else ""
            raise EncoderError(f"{url} returned a web page{what}, not the file; download it "
                               "in a browser instead")
        url = target
    raise EncoderError(f"{url}: too many confirmation pages")


def download(url: str, part: Path, *, desc: str = "", progress=None,
             retries: int = RETRIES, timeout: float = TIMEOUT_S) -> Path:
    """Stream ``url`` into ``part``, continuing a partial ``part`` with an HTTP Range request.

    Returns ``part`` once the server has sent every byte it announced (the content is not
    checked here). A cut connection is resumed up to ``retries`` times.

    Raises
    ------
    EncoderError
        HTTP error, no network, or the connection kept being cut (``part`` is kept: running
        again resumes it).
    """
    opener = _opener()
    part.parent.mkdir(parents=True, exist_ok=True)
    cuts = 0
    while True:
        have = part.stat().st_size if part.exists() else 0
        response = _open_file(opener, url, have, timeout)
        status = getattr(response, "status", None) or response.getcode()
        if status == 416:  # the .part already holds the whole file
            response.close()
            return part
        content_range = response.headers.get("Content-Range") or ""
        if have and not (status == 206 and content_range.startswith(f"bytes {have}-")):
            have = 0  # the server sends the whole file again
        length = response.headers.get("Content-Length")
        total = have + int(length) if is_integer_text(length) else None
        written = have
        report(progress, have, total or 0, desc or part.name)
        try:
            # O_NOFOLLOW: a .part planted as a link is never written through.
            flags = (os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | (os.O_APPEND if have else os.O_TRUNC))
            with response, os.fdopen(os.open(part, flags, 0o644), "ab" if have else "wb") as out:
                while True:
                    try:
                        chunk = response.read(CHUNK)
                    except (OSError, http.client.HTTPException) as exc:
                        raise _Cut(f"{type(exc).__name__}: {exc}") from None
                    if not chunk:
                        break
                    out.write(chunk)
                    written += len(chunk)
                    report(progress, written, total or 0, desc or part.name)
            if total is not None and written < total:
                raise _Cut(f"connection closed at byte {written} of {total}")
            return part
        except _Cut as exc:
            cuts += 1
            if cuts > retries:
                raise EncoderError(f"download from {url} was cut {cuts} times (last: {exc}); "
                                   f"run the command again to resume {part}") from None

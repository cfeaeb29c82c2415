"""s2r.inputs: untrusted files are checked before they are opened, and quoted safely."""

from __future__ import annotations

import os
import threading

import pytest

from s2r.errors import DataError, S2RError
from s2r.inputs import QUOTE_LIMIT, input_file, quoted, read_bounded


def test_quoted_cuts_long_text_and_says_its_length():
    out = quoted("x" * 200_000_000)
    assert len(out) < QUOTE_LIMIT + 40
    assert "200,000,000 characters" in out


def test_quoted_strips_terminal_escapes_and_controls():
    out = quoted("\x1b[2J\x1b]0;pwned\x07ok\r\nline\x00")
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\x00" not in out
    assert "ok" in out and "line" in out and "pwned" not in out


def test_quoted_short_text_is_its_repr():
    assert quoted("resnet18") == "'resnet18'"
    assert quoted(b"abc") == "'abc'"


def test_a_regular_file_within_the_bound_is_read(tmp_path):
    f = tmp_path / "r.csv"
    f.write_bytes(b"a,b\n1,2\n")
    assert read_bounded(f, "--real-results", max_bytes=100) == b"a,b\n1,2\n"


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo", "device", "folder", "missing"])
def test_what_is_not_a_regular_file_is_refused_without_opening(tmp_path, kind):
    target = tmp_path / "in.csv"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        target.symlink_to(tmp_path / "pipe")
    elif kind == "device":
        target = "/dev/zero"
    elif kind == "folder":
        target.mkdir()
    done = []
    worker = threading.Thread(target=lambda: done.append(
        pytest.raises(DataError, input_file, target, "--real-results", max_bytes=10,
                      error=DataError)), daemon=True)
    worker.start()
    worker.join(10)
    assert done, "input_file blocked on a FIFO"
    message = str(done[0].value)
    assert "--real-results" in message and "\n" not in message
    assert ("does not exist" if kind == "missing" else "not a regular file") in message


def test_a_file_over_the_bound_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(10**9)          # sparse: costs no disk
    with pytest.raises(S2RError, match="1,000,000,000 bytes, over the limit of 1,000 bytes"):
        read_bounded(big, "report", max_bytes=1000)

"""Reading marks back out of a Vega SVG and checking PDF/PNG files (test helpers)."""

from __future__ import annotations

import re
import struct

import numpy as np

_TRANSLATE = r'transform="translate\(([-\d.e]+),([-\d.e]+)\)"'


def _group(svg: str, cls: str) -> list[str]:
    """The inner text of every ``<g class="cls ...">`` element (not nested ones)."""
    out = []
    for m in re.finditer(rf'<g class="{cls}[^"]*"[^>]*>', svg):
        depth, i = 1, m.end()
        while depth:
            nxt = re.search(r"<g[ >]|</g>", svg[i:])
            depth += 1 if nxt.group(0) != "</g>" else -1
            i += nxt.end()
        out.append(svg[m.end():i])
    return out


def symbols(svg: str) -> np.ndarray:
    """``(n, 2)`` positions of every symbol mark (points of a scatter), plot coordinates."""
    pts = []
    for body in _group(svg, "mark-symbol role-mark"):
        pts += [(float(x), float(y)) for x, y in
                re.findall(r'<path[^>]*?' + _TRANSLATE, body)]
    return np.asarray(pts, dtype=float).reshape(-1, 2)


def axis_maps(svg: str) -> tuple[np.poly1d, np.poly1d]:
    """Linear maps plot coordinate -> data value of the x and y axes, fitted on their tick
    labels (exact positions). x labels are centred on their ticks; a y label sits on its
    baseline a constant distance under its tick, measured against the tick lines (which
    Vega rounds to whole pixels) and taken off."""
    ticks_y = [float(y) for body in _group(svg, "mark-rule role-axis-tick")
               for y in re.findall(r'<line transform="translate\(0,([-\d.e]+)\)"', body)]
    fits = {}
    for body in _group(svg, "mark-text role-axis-label"):
        ticks = re.findall(r'<text text-anchor="(\w+)" ' + _TRANSLATE + r'[^>]*>([^<]+)</text>',
                           body)
        values = np.array([float(t[3].replace("\u2212", "-")) for t in ticks])
        if ticks[0][0] == "end":      # y axis labels: right aligned, on their baseline
            coords = np.array([float(t[2]) for t in ticks])
            # each label's nearest tick above it (labels that overlap are left out by Vega,
            # so labels and ticks are not paired by order)
            gaps = coords[:, None] - np.asarray(ticks_y)[None, :]
            coords = coords - np.median(np.where(gaps >= -0.5, gaps, np.inf).min(axis=1))
            key = "y"
        else:                          # x axis labels: centred (the first one may start)
            coords = np.array([float(t[1]) for t in ticks])
            keep = np.array([t[0] == "middle" for t in ticks])
            coords, values, key = coords[keep], values[keep], "x"
        fits[key] = np.poly1d(np.polyfit(coords, values, 1))
    return fits["x"], fits["y"]


def pdf_pages(data: bytes) -> int:
    """Page objects in a PDF file."""
    return len(re.findall(rb"/Type\s*/Page(?!s)", data))


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG header."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def axis_ticks(svg: str) -> dict[str, list[float]]:
    """The tick labels of the x and y axes, as numbers (Vega writes minus as U+2212)."""
    out = {}
    for body in _group(svg, "mark-text role-axis-label"):
        ticks = re.findall(r'<text text-anchor="(\w+)" [^>]*>([^<]+)</text>', body)
        key = "y" if ticks[0][0] == "end" and all(t[0] == "end" for t in ticks) else "x"
        out[key] = [float(t[1].replace("\u2212", "-").replace(",", "")) for t in ticks]
    return out


def texts(svg: str) -> list[str]:
    """Every text of the marks (labels, markers), in drawing order."""
    return [t for body in _group(svg, "mark-text role-mark")
            for t in re.findall(r"<text[^>]*>([^<]+)</text>", body)]

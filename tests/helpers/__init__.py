"""Helpers shared by the tests (and the benchmarks): :mod:`tests.helpers.datafiles` writes tiny
dataset files, :mod:`tests.helpers.browser` runs the dashboard in headless Chromium."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository root."""
APP = REPO / "app.py"
"""The dashboard's entry point."""

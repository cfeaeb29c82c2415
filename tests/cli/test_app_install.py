"""``pip install`` is enough: the wheel carries the dashboard and ``s2r app`` serves it.

The wheel is built from a copy of the sources (nothing is written into the checkout) with the
checkout's setuptools (``--no-build-isolation``: no download), installed with ``--no-deps``
into a fresh venv made without the checkout on its path; the dependencies (Streamlit, torch)
come from this test's own environment through a ``.pth`` line, so no 5 GB re-download. Then
``s2r app --port P``, started from an empty folder, must answer ``ok`` on
``/_stcore/health`` and serve pages whose files come from the installed ``s2r_dashboard``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from s2r.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("s2r", "app.py", "app_pages", "ui", ".streamlit", "pyproject.toml", "setup.py",
           "README.md", "requirements.txt", "requirements-ray.txt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(dist)], check=True,
                   capture_output=True, timeout=300)
    return next(dist.glob("s2r-*.whl"))


def test_the_wheel_holds_the_dashboard_and_the_ray_extra(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("s2r_dashboard/app.py", "s2r_dashboard/app_pages/scores.py",
                 "s2r_dashboard/app_pages/validation.py", "s2r_dashboard/ui/state.py",
                 "s2r_dashboard/ui/loaders/data.py", "s2r/figures/scores.py",
                 "s2r_dashboard/.streamlit/config.toml", "s2r/cli.py", "s2r/dashboard.py",
                 "s2r/evidence/data/evidence.json"):
        assert name in names, name
    assert not any(n.startswith("s2r_dashboard/") and n.endswith(("setup.py", ".md", ".txt"))
                   for n in names)
    meta = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
    assert "Provides-Extra: ray" in meta and 'ray<3,>=2.40; extra == "ray"' in meta
    assert "Requires-Dist: streamlit" in meta


@pytest.mark.slow
def test_fresh_venv_pip_install_then_s2r_app_is_healthy(wheel, tmp_path):
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                    "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()
    Path(site, "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    where = subprocess.run([str(py), "-c", "import s2r, s2r.dashboard as d; "
                            "print(s2r.__file__); print(d.dashboard_dir())"], cwd=cwd,
                           check=True, capture_output=True, text=True, timeout=120).stdout
    assert where.splitlines() == [f"{site}/s2r/__init__.py", f"{site}/s2r_dashboard"]
    # the dashboard's glue, subpackages included (ui/loaders/), imports where the app runs it
    subprocess.run([str(py), "-c", "import ui.guards, ui.loaders.validation"],
                   cwd=f"{site}/s2r_dashboard", check=True, capture_output=True, timeout=300)
    port = _free_port()
    env = {**os.environ, "S2R_AUTOCOMPUTE": "0", "S2R_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([str(venv / "bin" / "s2r"), "app", "demo:gap=0.8", "--port",
                             str(port)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        health = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", proc.stdout.read().decode() if proc.poll() is not None else ""
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out = proc.communicate(timeout=20)[0].decode()
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0].decode()
    assert f"{site}/s2r_dashboard/app.py on http://localhost:{port}" in out


def test_app_rejects_a_bad_dataset_and_port(capsys):
    assert main(["app", "nope:::", "--port", "8501"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert main(["app", "--port", "0"]) == 2
    assert "--port must be in 1..65535" in capsys.readouterr().err


def test_config_flags_carry_the_repo_config():
    from s2r.commands.app import streamlit_command

    cmd = streamlit_command(ROOT, 8600)
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert cmd[4] == str(ROOT / "app.py")
    assert "--server.headless=true" in cmd and "--server.port=8600" in cmd
    assert "--browser.gatherUsageStats=false" in cmd


def test_app_passes_the_dataset_cache_and_port_to_streamlit(tmp_path, monkeypatch):
    """``s2r app SIM REAL --cache-dir D --port P`` execs ``streamlit run`` on the dashboard
    with the dataset as the home page's default (two files joined by os.pathsep, absolute)."""
    seen = {}

    def fake_execve(path, argv, env):
        seen.update(path=path, argv=argv, env=env)
        raise SystemExit(0)

    monkeypatch.setattr(os, "execve", fake_execve)
    monkeypatch.chdir(tmp_path)
    for name in ("sim.hdf5", "real.hdf5"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(SystemExit):
        main(["app", "sim.hdf5", "real.hdf5", "--port", "8642", "--cache-dir", "c"])
    assert seen["argv"][:5] == [sys.executable, "-m", "streamlit", "run",
                                str(ROOT / "app.py")]
    assert "--server.port=8642" in seen["argv"]
    assert seen["env"]["S2R_DATASET"] == os.pathsep.join(
        [str(tmp_path / "sim.hdf5"), str(tmp_path / "real.hdf5")])
    assert seen["env"]["S2R_CACHE_DIR"] == str(tmp_path / "c")
    seen.clear()
    with pytest.raises(SystemExit):
        main(["app", "demo:gap=0.8"])
    assert seen["env"]["S2R_DATASET"] == "demo:gap=0.8"
    assert "--server.port=8501" in seen["argv"]


# ----------------------------------------------------------------------------- make setup
def _fresh_venv(where: Path) -> tuple[Path, str]:
    """A venv without pip whose dependencies (pip, setuptools, torch...) come from this test's
    environment through a ``.pth`` line: ``(venv, its site-packages)``."""
    venv = where / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print("
                           "sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    Path(site, "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv, site


def _help_from(folder: Path, *cmd: str) -> str:
    """``cmd --help`` run from ``folder`` with nothing of a checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([*cmd, "--help"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_make_setup_installs_the_checkout_editable_so_s2r_runs_from_any_folder(tmp_path):
    """Issue 36 item 3: ``make setup`` installs the project into its venv (editable). The
    Makefile's own target runs on a copy of the checkout (nothing is written into this one)
    and a fresh venv whose requirements are already in (its stamp is newer than them), so
    only the project's install runs: then ``VENV/bin/s2r --help`` and ``python -m s2r --help``
    work from an empty folder and import this copy's ``s2r``; a second ``make setup`` does
    nothing, unless the venv's install points at another checkout."""
    src = tmp_path / "clone"
    for name in (*SOURCES, "Makefile", "requirements-dev.txt"):
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    venv, _ = _fresh_venv(tmp_path)
    (venv / ".s2r-installed").touch()                     # requirements: already installed
    make = subprocess.run(["make", "-C", str(src), "setup", f"VENV={venv}"],
                          capture_output=True, text=True, timeout=600)
    assert make.returncode == 0, make.stdout + make.stderr
    assert "--editable ." in make.stdout
    assert (venv / ".s2r-editable").read_text().strip() == str(src)   # the checkout installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "usage: s2r" in _help_from(elsewhere, str(venv / "bin" / "s2r"))
    assert "usage: s2r" in _help_from(elsewhere, str(venv / "bin" / "python"), "-m", "s2r")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import s2r; print(s2r.__file__)"],
                           cwd=elsewhere, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert where.stdout.strip() == str(src / "s2r" / "__init__.py")   # editable: the clone
    again = subprocess.run(["make", "-C", str(src), "setup", f"VENV={venv}"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "pip install" not in again.stdout, again.stdout
    # a venv whose install points at another checkout (shared by two clones) follows this one
    (venv / ".s2r-editable").write_text("/somewhere/else\n")
    moved = subprocess.run(["make", "-C", str(src), "setup", f"VENV={venv}"],
                           capture_output=True, text=True, timeout=600)
    assert moved.returncode == 0 and "--editable ." in moved.stdout, moved.stdout + moved.stderr
    assert (venv / ".s2r-editable").read_text().strip() == str(src)


def test_the_venvs_s2r_runs_from_another_folder(tmp_path):
    """After ``make setup`` (``make test`` runs it first), this environment's ``s2r`` command
    and ``python -m s2r`` work from a folder outside any checkout (whichever checkout the
    editable install points at)."""
    bin_dir = Path(sys.executable).parent
    assert "usage: s2r" in _help_from(tmp_path, str(bin_dir / "s2r"))
    assert "usage: s2r" in _help_from(tmp_path, sys.executable, "-m", "s2r")

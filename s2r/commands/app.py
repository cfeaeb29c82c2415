"""``s2r app [DATASET] [--port N]``: start the dashboard (as ``tensorboard --logdir`` does).

::

    s2r app                                  # the built-in demo, http://localhost:8501
    s2r app demo:gap=0.8 --port 8600
    s2r app sim.zarr real.zarr --cache-dir /data/s2r-cache

Runs ``streamlit run app.py`` on the dashboard files of this install or clone
(:func:`s2r.dashboard.dashboard_dir`) with the settings of its ``.streamlit/config.toml``
passed as flags, so the working folder does not matter. DATASET becomes the home page's
default dataset (``$S2R_DATASET``); ``--cache-dir`` sets ``$S2R_CACHE_DIR``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from s2r.cli import add_cache_dir_arg, integer_arg
from s2r.errors import S2RError
from s2r.settings import child_environment


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "app", help="start the dashboard (streamlit) on DATASET",
        description="Start the s2r dashboard in a Streamlit server and print its address. "
                    "Stop it with Ctrl+C.")
    p.add_argument("dataset", nargs="*", metavar="DATASET",
                   help="the home page's default dataset: 'demo[:key=value,...]', a folder, "
                        "or two files SIM REAL (default: the demo)")
    p.add_argument("--port", type=integer_arg, default=8501, metavar="N", help="server port (8501)")
    p.add_argument("--address", default=None, metavar="HOST",
                   help="address to listen on (default: Streamlit's, all interfaces)")
    add_cache_dir_arg(p)
    p.set_defaults(func=run)


def config_flags(config_file: Path) -> list[str]:
    """``.streamlit/config.toml`` as ``streamlit run`` flags (``--server.headless=true``...).

    Streamlit reads the file only from the working folder or ``~/.streamlit``; the same
    options given as flags apply wherever the command runs."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: Streamlit's own TOML dependency
        import toml as tomllib

    if not config_file.is_file():
        return []
    flags = []
    for section, options in tomllib.loads(config_file.read_text()).items():
        for name, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{name}={text}")
    return flags


def streamlit_command(folder: Path, port: int, address=None) -> list[str]:
    """The ``python -m streamlit run`` command line of the dashboard in ``folder``."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(folder / "app.py"),
           *config_flags(folder / ".streamlit" / "config.toml"), f"--server.port={port}"]
    if address:
        cmd.append(f"--server.address={address}")
    return cmd


def run(args) -> int:
    from s2r.dashboard import dashboard_dir
    from s2r.datasets import parse_spec

    if not 0 < args.port < 65536:
        raise S2RError(f"--port must be in 1..65535, got {args.port}")
    variables = {}
    if args.dataset:
        spec = args.dataset[0] if len(args.dataset) == 1 else list(args.dataset)
        if len(args.dataset) > 2:
            raise S2RError(f"DATASET: give one spec or two files SIM REAL, got "
                           f"{len(args.dataset)} arguments")
        from s2r.datasets.world import is_world_spec

        parse_spec(spec)  # a bad spec fails here, with the library's message
        variables["S2R_DATASET"] = spec if isinstance(spec, str) else os.pathsep.join(
            str(Path(s).resolve()) for s in spec)
        if isinstance(spec, str) and not is_world_spec(spec):
            variables["S2R_DATASET"] = str(Path(spec).resolve())
    if args.cache_dir:
        from s2r.cache import Cache

        root = Path(args.cache_dir).expanduser().resolve()
        Cache(root)  # a folder that is not s2r's cache fails here, before the server starts
        variables["S2R_CACHE_DIR"] = str(root)
    env = child_environment(**variables)
    folder = dashboard_dir()
    cmd = streamlit_command(folder, args.port, args.address)
    print(f"s2r dashboard: {folder / 'app.py'} on http://localhost:{args.port}", flush=True)
    if os.name == "posix":  # become the server: Ctrl+C and kill reach Streamlit directly
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0

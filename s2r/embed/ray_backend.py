"""The connection to a Ray cluster and the resources of an encoder's actor.

Only the Ray backend imports this module, and only this module and the ones it serves
(:mod:`s2r.embed.ray_run`, :mod:`s2r.pipeline.ray_grid`) import Ray: ``import s2r.embed`` and the
local path never do (``tests/embed/test_ray.py`` checks it).

Addresses (``--address``, else ``$S2R_RAY_ADDRESS``: a setting, which the CLI, the pipeline and
the dashboard hand down as ``default``; this module never reads the environment):

- none: start a Ray instance on this machine for the run (``ray.init()``), or use the one
  this process already started;
- ``HOST:PORT``: the head node of a running cluster (``ray start --head`` prints it; 6379
  by default); ``ray://HOST:PORT``: the same through Ray Client (port 10001);
- ``auto``: the cluster ``ray start`` left on this machine.

Before handing a ``HOST:PORT`` to Ray, s2r opens a TCP connection to it (a few seconds at
most): Ray itself keeps retrying an unreachable address for minutes.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Iterator, Optional

from s2r.errors import S2RError
from s2r.inputs import is_integer_text

__all__ = ["RAY_ADDRESS_ENV", "MAX_RESTARTS", "MAX_TASK_RETRIES", "import_ray",
           "resolve_address", "check_address", "ray_session", "actor_options"]

#: Environment variable naming the cluster when ``--address`` is not given.
RAY_ADDRESS_ENV = "S2R_RAY_ADDRESS"
#: How often Ray restarts an encoder's actor that died (a lost node, a killed process).
MAX_RESTARTS = 3
#: How often Ray retries a shard whose actor died while embedding it.
MAX_TASK_RETRIES = 3
#: Seconds the reachability probe of ``HOST:PORT`` waits.
PROBE_TIMEOUT = 5.0


def import_ray():
    """The ``ray`` module, or :class:`S2RError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise S2RError("--backend ray needs the 'ray' package: pip install -r "
                       "requirements-ray.txt (or use --backend local)") from None
    return ray


def resolve_address(address: Optional[str], default: Optional[str] = None) -> Optional[str]:
    """``address``, else ``default`` (the settings' ``ray_address``, ``$S2R_RAY_ADDRESS``,
    handed down), else None (a Ray instance on this machine)."""
    if address is None or not str(address).strip():
        address = default
    return None if address is None or not str(address).strip() else str(address).strip()


def _host_port(address: str) -> Optional[tuple[str, int]]:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``; None for ``auto``/``local``."""
    if address in ("auto", "local"):
        return None
    text = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = text.rpartition(":")
    if not sep or not host or not is_integer_text(port) or not 0 < int(port) < 65536 or "/" in text:
        raise S2RError(f"--address must be HOST:PORT (the head node, e.g. 10.0.0.1:6379), "
                       f"ray://HOST:PORT, auto or local; got {address!r}")
    return host.strip("[]"), int(port)


def check_address(address: Optional[str], default: Optional[str] = None) -> Optional[str]:
    """Validate an address's syntax (no connection); the resolved address
    (:func:`resolve_address`).

    Raises
    ------
    S2RError
        Not ``HOST:PORT``, ``ray://HOST:PORT``, ``auto`` or ``local``.
    """
    resolved = resolve_address(address, default)
    if resolved is not None:
        _host_port(resolved)
    return resolved


def _probe(address: str) -> None:
    """Raise :class:`S2RError` unless a TCP connection to ``address`` opens."""
    where = _host_port(address)
    if where is None:
        return
    try:
        with socket.create_connection(where, timeout=PROBE_TIMEOUT):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise S2RError(f"--backend ray: no Ray cluster answers at {address} ({reason}); start "
                       "one with 'ray start --head' and give its address with --address or "
                       f"${RAY_ADDRESS_ENV}") from None


@contextlib.contextmanager
def ray_session(address: Optional[str] = None) -> Iterator:
    """Ray, connected for the block: the cluster at ``address`` or a local instance.

    A session this process had already opened (``ray.init`` by the caller) is used as it is
    and left open; one opened here is shut down at the end of the block.

    Parameters
    ----------
    address : str, optional
        See the module docstring; None = a local instance (the caller hands down
        ``$S2R_RAY_ADDRESS``).

    Yields
    ------
    module
        The ``ray`` module, initialised.

    Raises
    ------
    S2RError
        Ray is not installed, the address is malformed, or no cluster answers there.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    resolved = check_address(address)
    if resolved is not None:
        _probe(resolved)
    try:
        ray.init(address=resolved, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise S2RError(f"--backend ray: cannot connect to the Ray cluster at "
                       f"{resolved or 'a new local instance'}: {str(exc).splitlines()[0]}") \
            from None
    try:
        yield ray
    finally:
        ray.shutdown()


def actor_options(ray, device: Optional[str], *, num_gpus: float = 1.0,
                  num_cpus: float = 1.0) -> tuple[dict, str]:
    """Resources and fault tolerance of one encoder's actor, and the device it runs on.

    Parameters
    ----------
    ray : module
        Initialised.
    device : {"cpu", "cuda"} or None
        None: a GPU actor when the cluster has GPUs, else a CPU actor.
    num_gpus : float
        GPUs per actor when it runs on one: 1, or a fraction (0.5: two encoders share a GPU).
    num_cpus : float
        CPUs per actor (a CPU actor's torch threads follow it).

    Returns
    -------
    (dict, str)
        ``.options(...)`` keywords (``num_gpus``, ``num_cpus``, ``max_restarts``,
        ``max_task_retries``) and ``"cuda"`` or ``"cpu"``.

    Raises
    ------
    S2RError
        ``device="cuda"`` on a cluster without GPUs; ``num_gpus`` or ``num_cpus`` out of range.
    """
    if not 0 < float(num_gpus) <= 1 and not float(num_gpus).is_integer():
        raise S2RError(f"GPUs per actor must be a fraction in (0, 1] or a whole number, got "
                       f"{num_gpus!r}")
    if not float(num_cpus) > 0:
        raise S2RError(f"CPUs per actor must be > 0, got {num_cpus!r}")
    gpus = float(ray.cluster_resources().get("GPU", 0))
    if device == "cuda" and gpus == 0:
        raise S2RError("--device cuda: the Ray cluster has no GPU; use --device cpu")
    use_gpu = device != "cpu" and gpus > 0
    options = {"num_gpus": float(num_gpus) if use_gpu else 0, "num_cpus": float(num_cpus),
               "max_restarts": MAX_RESTARTS, "max_task_retries": MAX_TASK_RETRIES}
    return options, ("cuda" if use_gpu else "cpu")

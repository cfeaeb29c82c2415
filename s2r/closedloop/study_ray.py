"""A study's measurements on a Ray cluster: every (cell, encoder) one Ray task.

Each task runs :func:`~s2r.closedloop.validation.measure_encoder`: the encoder's scores at
every gap of the cell and its closed-loop outcomes, written into the study's cache folder.
The driver (:func:`s2r.closedloop.study.run_study`) then validates each cell as soon as all
its encoders are measured: :func:`~s2r.closedloop.validation.validate` finds every record in
the cache (the same keys), so its report is the one a run without Ray writes.

The cache folder must be one every worker can write: this machine's for a local cluster
(``--ray local``), a shared file system for a cluster of several machines. Built-in controls
are trained on the driver first (a control trained by two tasks at once would race).
"""

from __future__ import annotations

from typing import Callable, Iterator, Optional, Sequence

from s2r.embed.ray_backend import MAX_TASK_RETRIES, ray_session
from s2r.errors import S2RError

__all__ = ["measure_cells_ray"]


def _measure(spec: str, encoder_id: str, gaps: tuple, params, cache_root: str, device,
             settings, object_focus: bool) -> str:
    """One Ray task: :func:`measure_encoder` into the cache at ``cache_root``; returns the
    encoder id."""
    from s2r.cache import Cache
    from s2r.closedloop.validation import measure_encoder

    measure_encoder(spec, encoder_id, gaps, params=params, cache=Cache(cache_root),
                    device=device, settings=settings, object_focus=object_focus)
    return encoder_id


def measure_cells_ray(cells: Sequence, plan, *, cache, address: Optional[str], device=None,
                      settings=None,
                      on_encoder: Optional[Callable[[int, str, int], None]] = None
                      ) -> Iterator[int]:
    """Measure every encoder of every cell on the cluster at ``address``; yield each cell's
    index in ``cells`` once all its encoders are measured (while the cluster goes on with
    the others).

    Parameters
    ----------
    cells : sequence of Cell
    plan : StudyPlan
        Its rollout parameters and object focus.
    cache : Cache
        A cache folder (not ``False``, not read-only): the workers write into it.
    address : str or None
        As for :func:`s2r.embed.ray_backend.ray_session` (``local``: a new local instance).
    device : str, optional
    settings : s2r.settings.Settings
        Handed to every worker.
    on_encoder : callable, optional
        ``on_encoder(cell index, encoder id, encoders of that cell measured so far)``.

    Raises
    ------
    S2RError
        No cache folder; Ray missing or no cluster at ``address``.
    """
    from s2r.encoders.backends.simcnn import train_missing_controls

    root = getattr(cache, "root", None)
    if root is None or getattr(cache, "read_only", False):
        raise S2RError("--ray: a study on Ray needs a cache folder its workers write into "
                       "(leave out --no-cache)")
    ids = list(dict.fromkeys(e for cell in cells for e in cell.encoders))
    train_missing_controls(ids, settings=settings)
    with ray_session(address) as ray:
        task = ray.remote(num_cpus=1, max_retries=MAX_TASK_RETRIES)(_measure)
        refs = {}
        for k, cell in enumerate(cells):
            for encoder_id in cell.encoders:
                ref = task.remote(cell.spec, encoder_id, tuple(cell.gaps), plan.params,
                                  str(root), device, settings, plan.object_focus)
                refs[ref] = k
        left = {k: len(cell.encoders) for k, cell in enumerate(cells)}
        while refs:
            (ready,), _ = ray.wait(list(refs), num_returns=1)
            k = refs.pop(ready)
            encoder_id = ray.get(ready)
            left[k] -= 1
            if on_encoder is not None:
                on_encoder(k, encoder_id, len(cells[k].encoders) - left[k])
            if left[k] == 0:
                yield k

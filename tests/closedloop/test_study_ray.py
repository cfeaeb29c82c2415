"""A study on a local Ray cluster started here (2 CPUs): every (cell, encoder) a Ray task into
the same cache folder, then each cell validated on the driver from it; its reports are the
ones a run without Ray writes.

Bit-identity: fp32 sums on a CPU depend on torch's thread count, so the local reference runs
with one thread, as each Ray task (``num_cpus=1``) does; a score's PCA runs in numpy's BLAS,
whose threads a Ray task also limits to one, so scores agree to about 1e-7, not bit for bit
(measured: at most 4e-7 relative). Outcomes (counts of successes, steps) are equal exactly.
"""

import json

import pytest

from s2r.cache import Cache
from s2r.closedloop import study as S
from s2r.errors import S2RError
from tests.closedloop.test_study import demo_plan

pytest.importorskip("ray")


def same(a, b, where="report") -> None:
    """``a == b``, floats within 1e-6 relative (numpy's BLAS threads; see the module)."""
    assert type(a) is type(b) or {type(a), type(b)} <= {int, float}, where
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9), where
    else:
        assert a == b, where


@pytest.mark.slow
def test_the_ray_path_writes_the_local_paths_reports(cluster, one_thread, tmp_path,
                                                     monkeypatch):
    plan = demo_plan(object_focus=False)
    (local,) = S.run_study(plan, tmp_path / "local", cache=Cache(tmp_path / "c1"))
    messages = []
    (remote,) = S.run_study(plan, tmp_path / "ray", cache=Cache(tmp_path / "c2"),
                            address="local", progress=lambda d, t, m: messages.append(m))
    theirs, ours = json.loads(remote.read_text()), json.loads(local.read_text())
    same(theirs, ours)
    assert theirs["outcomes"] == ours["outcomes"]
    assert sum("measured on Ray" in m for m in messages) == len(plan.encoders)

    from s2r.closedloop import rollout

    def no_rollouts(*a, **k):
        raise AssertionError("the driver ran rollouts the workers had cached")

    monkeypatch.setattr(rollout, "run_rollouts", no_rollouts)
    (tmp_path / "ray" / "study.json").unlink()         # a fresh study over the same cache
    (again,) = S.run_study(plan, tmp_path / "ray", cache=Cache(tmp_path / "c2"))
    assert json.loads(again.read_text()) == theirs


def test_the_ray_path_needs_a_cache_folder(tmp_path):
    with pytest.raises(S2RError, match="a study on Ray needs a cache folder"):
        S.run_study(demo_plan(), tmp_path, cache=False, address="local")

"""The Meta-World world's spec options, its one-line errors, and what happens without
Meta-World or without EGL (one line naming what to install; the demo keeps working)."""

from __future__ import annotations

import pytest

from s2r.errors import DataError
from s2r.worlds import WORLDS


def test_the_spec_options_are_typed_and_checked():
    from s2r.datasets import parse_spec

    parsed = parse_spec("metaworld:task=assembly-v3,episodes=3,steps=20,gap=1,camera=topview")
    assert parsed == {"kind": "metaworld", "options": {
        "task": "assembly-v3", "episodes": 3, "steps": 20, "gap": 1.0, "seed": 0,
        "height": 96, "width": 128, "camera": "topview", "repeat": 2, "shift": "all",
        "masks": False}}
    for bad, words in (
            ("metaworld:task=reach", r"task 'reach' is not one of button-press-topdown-v3, "
                                     r"assembly-v3, peg-insert-side-v3, bin-picking-v3, "
                                     r"drawer-open-v3, hammer-v3"),
            ("metaworld:camera=gripperPOV", "camera 'gripperPOV' is not one of corner, corner2"),
            ("metaworld:gap=2", r"gap must be in \[0, 1\], got 2.0"),
            ("metaworld:shift=fog", "shift 'fog' is not one of all, lighting, texture, camera, "
                                    "distractors"),
            ("metaworld:steps=300", r"steps must be in \[2, 250\], got 300"),
            ("metaworld:steps=101,repeat=5", r"steps must be in \[2, 100\], got 101"),
            ("metaworld:height=8", r"height must be in \[32, 1024\], got 8"),
            ("metaworld:episodes=x", "option episodes='x' must be an integer"),
            ("metaworld:colour=red", "unknown metaworld option 'colour'; known options: task"),
            ("metaworld:episodes=400,steps=100", "over the metaworld's limit of 50,000 frames")):
        with pytest.raises(DataError, match=words):
            parse_spec(bad)


@pytest.mark.parametrize("name, stages, horizon, named", [
    ("button-press-topdown-v3", ("above the button", "at the button", "half pressed", "pressed"),
     50, ("button x", "button qz")),
    ("assembly-v3", ("at the handle", "lifted", "above the peg", "on the peg"), 60,
     ("nut handle x", "nut handle qz")),
    ("bin-picking-v3", ("at the cube", "lifted", "above the bin", "in the bin"), 100,
     ("cube x", "cube qz")),
    ("drawer-open-v3", ("above the handle", "at the handle", "half open", "open"), 60,
     ("handle x", "handle qz")),
    ("hammer-v3", ("at the handle", "lifted", "at the nail", "nail in"), 52,
     ("hammer x", "hammer qz", "nail x", "nail qz"))])
def test_the_task_columns_stages_and_horizons(name, stages, horizon, named):
    """Every object is 7 named columns (position, then MuJoCo's w-first quaternion) between
    the proprioception and the goal."""
    task = WORLDS["metaworld"].task({"task": name})
    assert task.stages == stages and task.horizon == task.demo_steps == horizon
    cols = task.columns
    objects = len(named) // 2
    k = 4 + 7 * objects + 3
    assert cols.proprio == (0, 1, 2, 3) and cols.task == tuple(range(4, k))
    assert cols.action_names == ("hand dx", "hand dy", "hand dz", "gripper effort")
    assert len(cols.state_names) == k + task.nq + task.nv + 7
    assert tuple(n for n in cols.state_names[4:k - 3] if n.endswith((" x", " qz"))) == named
    assert cols.state_names[k - 3:k] == ("goal x", "goal y", "goal z")


def test_the_horizons_follow_the_action_repeat_and_each_task_and_camera_is_its_own():
    world = WORLDS["metaworld"]
    assert world.task({"task": "assembly-v3", "repeat": 1}).horizon == 120
    assert world.task({"task": "hammer-v3", "repeat": 3}).horizon == 35
    ids = {world.task({"task": t, "camera": c}).identity() for t in world.tasks
           for c in ("corner", "topview")}
    assert len(ids) == 2 * len(world.tasks) == 12    # the task and its camera name the frames


def test_the_model_sizes_are_meta_worlds():
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.tasks import TASKS
    for spec in TASKS.values():
        model = sim.shared_env(spec).model
        assert spec.model_size == (model.nq, model.nv)


#: The digest of this world's package source (s2r.identity.package_digest) that
#: s2r.worlds.metaworld.world.CODE_ID was last checked against. When this test fails, the
#: package's code changed: if what its tasks compute or draw changed (states, stages, frames,
#: experts), give CODE_ID a new value (cached rollouts, demonstrations and controls are then
#: misses); either way, record the new digest here.
METAWORLD_SOURCE_DIGEST = "97fa6003bcdcf856ca2479610469a6ae"


def test_meta_worlds_code_is_unchanged_or_its_code_id_was_considered():
    from s2r.worlds.metaworld import world

    assert world.source_digest() == METAWORLD_SOURCE_DIGEST, (
        "Meta-World's code changed: bump s2r.worlds.metaworld.world.CODE_ID if what its tasks "
        f"compute or draw changed, then set METAWORLD_SOURCE_DIGEST = {world.source_digest()!r}")


def test_the_task_identity_is_pinned():
    """Cache keys of rollouts and demonstrations stay those the code wrote before."""
    from s2r.worlds.metaworld.world import MetaWorldTask, _versions

    if _versions() == "metaworld 3.1.1, mujoco 3.3.0":
        assert MetaWorldTask().identity() == "817125ed697eabf8"


@pytest.mark.parametrize("absent, words", [
    ("package", "Meta-World needs the metaworld and gymnasium[mujoco] packages (metaworld not "
                "installed): pip install metaworld 'gymnasium[mujoco]'"),
    ("egl", "this machine has no EGL driver: install libegl1 and libgl1-mesa-dri"),
])
def test_without_meta_world_or_egl_a_spec_is_one_line_and_the_demo_works(
        absent, words, monkeypatch, capsys):
    from s2r.cli import main
    from s2r.datasets import load_dataset
    from s2r.worlds.metaworld import availability

    if absent == "package":
        real = availability._package
        monkeypatch.setattr(availability, "_package", lambda n: n != "metaworld" and real(n))
    else:
        monkeypatch.setattr(availability, "_library", lambda name: False)
    assert words in WORLDS["metaworld"].unavailable()
    with pytest.raises(DataError) as err:
        load_dataset("metaworld:episodes=2")
    assert words in str(err.value) and "\n" not in str(err.value)
    assert main(["info", "metaworld:episodes=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and "Traceback" not in err
    assert main(["validate", "metaworld:episodes=2", "--out", "r.json"]) == 2
    assert words in capsys.readouterr().err
    assert load_dataset("demo:episodes=1,steps=2,height=64,width=64").n_frames("sim") == 2
    assert "metaworld" in WORLDS             # still listed, only unavailable


def test_another_gl_backend_is_named(monkeypatch):
    from s2r.worlds.metaworld import availability

    monkeypatch.setattr(availability, "prefer_headless_rendering", lambda: "glfw")
    assert availability.missing() == ("Meta-World renders off-screen and MUJOCO_GL=glfw does "
                                       "not: unset it (EGL) or set MUJOCO_GL=egl or osmesa")
    monkeypatch.setattr(availability, "prefer_headless_rendering", lambda: "osmesa")
    monkeypatch.setattr(availability, "_library", lambda name: name != "OSMesa")
    assert "install libosmesa6" in availability.missing()


def test_each_worker_rasterises_on_its_share_of_the_cores(monkeypatch):
    """llvmpipe starts a rasteriser thread a core in every process: n workers on n cores get
    one each (not n x n threads), one worker gets every core, a user's LP_NUM_THREADS stays."""
    from s2r.worlds.metaworld import pool

    monkeypatch.setattr(pool, "core_count", lambda: 4)
    assert pool.rasteriser_threads(4, {})["LP_NUM_THREADS"] == "1"
    assert pool.rasteriser_threads(2, {"A": "b"}) == {"A": "b", "LP_NUM_THREADS": "2"}
    assert pool.rasteriser_threads(1, {})["LP_NUM_THREADS"] == "4"
    assert pool.rasteriser_threads(8, {})["LP_NUM_THREADS"] == "1"
    assert pool.rasteriser_threads(4, {"LP_NUM_THREADS": "3"})["LP_NUM_THREADS"] == "3"

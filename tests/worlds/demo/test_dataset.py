"""The built-in demo world's dataset (s2r.worlds.demo.dataset): structure, determinism, the gap,
masks, actions, pairing, validation and lazy rendering."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import DataError
from s2r.worlds.demo import dataset as demo
from s2r.worlds.demo import schema
from s2r.worlds.demo.dataset import ACTION_NAMES, STATE_NAMES, demo_renderer, make_demo
from s2r.worlds.demo.realism import sample_look
from s2r.worlds.demo.scene import (FOREARM, UPPER_ARM, arm_joints, gripper_rotation,
                                   hand_point, hole_positions, make_camera, rot6d, rot_from_6d)
from s2r.worlds.demo.sensor import gaussian_blur
from s2r.worlds.demo.source import RenderedImages

SMALL = dict(height=72, width=96)


def _render(**kw):
    return make_demo(**{**SMALL, **kw})


# ----------------------------------------------------------------------------- structure
def test_frameset_layout(small_demo):
    fs = small_demo
    e, t = 4, 12
    n = 2 * e * t
    assert len(fs) == n and fs.image_shape == (96, 128, 3)
    imgs = fs.read_images(np.arange(n))
    assert imgs.dtype == np.uint8 and imgs.shape == (n, 96, 128, 3)
    assert fs.actions.shape == (n, 10) and fs.actions.dtype == np.float32
    assert fs.action_names == ACTION_NAMES == ["pos_x", "pos_y", "pos_z", "rot6d_0", "rot6d_1",
                                               "rot6d_2", "rot6d_3", "rot6d_4", "rot6d_5",
                                               "gripper"]
    assert fs.state.shape == (n, len(STATE_NAMES)) == (n, 22)
    # sim episodes 0..E-1 first, then real E..2E-1; steps 0..T-1 inside each
    assert (fs.domain[: e * t] == "sim").all() and (fs.domain[e * t:] == "real").all()
    assert np.array_equal(np.unique(fs.episode[fs.domain == "sim"]), np.arange(e))
    assert np.array_equal(np.unique(fs.episode[fs.domain == "real"]), np.arange(e, 2 * e))
    assert np.array_equal(fs.step, np.tile(np.arange(t), 2 * e))
    masks = fs.read_masks(np.arange(n))
    assert masks.shape == (n, 96, 128) and masks.dtype == np.uint8
    assert set(np.unique(masks)) == {0, 1}
    assert fs.name == "demo"
    assert fs.source == {"kind": "demo", "episodes": 4, "steps": 12, "gap": 0.5, "seed": 0,
                         "paired": False, "height": 96, "width": 128}
    assert fs.require_domains() is fs


def test_deterministic_for_a_seed():
    a = _render(episodes=2, steps=6, gap=0.7, seed=5)
    b = _render(episodes=2, steps=6, gap=0.7, seed=5)
    idx = np.arange(len(a))
    assert a.read_images(idx).tobytes() == b.read_images(idx).tobytes()
    assert a.read_masks(idx).tobytes() == b.read_masks(idx).tobytes()
    assert a.actions.tobytes() == b.actions.tobytes()
    assert a.state.tobytes() == b.state.tobytes()
    assert a.fingerprint == b.fingerprint
    c = _render(episodes=2, steps=6, gap=0.7, seed=6)
    assert not np.array_equal(a.actions, c.actions)
    assert not np.array_equal(a.read_images(idx), c.read_images(idx))


def test_more_episodes_extend_fewer():
    """Episode e of a domain is the same whatever the episode count (seeded per episode)."""
    two = _render(episodes=2, steps=5, gap=1.0, seed=2)
    three = _render(episodes=3, steps=5, gap=1.0, seed=2)
    for dom in ("sim", "real"):
        i2, i3 = two.indices(dom), three.indices(dom)[: len(two.indices(dom))]
        assert np.array_equal(two.read_images(i2), three.read_images(i3))
        assert np.array_equal(two.actions[i2], three.actions[i3])


@pytest.mark.parametrize("hw", [(64, 64), (64, 150), (120, 64)])
def test_any_size_from_64(hw):
    fs = make_demo(episodes=1, steps=3, gap=1.0, height=hw[0], width=hw[1])
    imgs = fs.read_images(np.arange(len(fs)))
    assert imgs.shape == (6, hw[0], hw[1], 3)
    masks = fs.read_masks(np.arange(len(fs)))
    assert 0 < masks.mean() < 0.5   # the robot is in view at every aspect ratio


# ----------------------------------------------------------------------------- the gap
def test_gap_zero_real_equals_sim_exactly():
    fs = _render(episodes=2, steps=8, gap=0.0, seed=3, paired=True)
    sim, real = fs.indices("sim"), fs.indices("real")
    assert np.array_equal(fs.state[sim], fs.state[real])
    assert np.array_equal(fs.read_images(sim), fs.read_images(real))
    assert np.array_equal(fs.read_masks(sim), fs.read_masks(real))


def test_real_moves_away_from_sim_as_gap_rises():
    gaps = [0.0, 0.1, 0.25, 0.5, 0.75, 1.0]
    mad, mask_change, warmth = [], [], []
    for g in gaps:
        fs = _render(episodes=2, steps=6, gap=g, seed=4, paired=True)
        sim = fs.read_images(fs.indices("sim")).astype(np.float64)
        real = fs.read_images(fs.indices("real")).astype(np.float64)
        mad.append(np.abs(real - sim).mean())
        warmth.append((real[..., 0] - real[..., 2]).mean() - (sim[..., 0] - sim[..., 2]).mean())
        mask_change.append((fs.read_masks(fs.indices("sim"))
                            != fs.read_masks(fs.indices("real"))).mean())
    assert mad[0] == 0.0
    assert all(b > a for a, b in zip(mad, mad[1:])), mad
    assert mad[-1] > 20            # gap 1 is a large, visible difference (grey levels)
    assert mad[1] < 0.35 * mad[-1]  # ... and a small gap a small one
    # warmer light and a wooden table: red rises against blue, more so with the gap
    assert warmth[0] == 0.0 and all(b > a for a, b in zip(warmth, warmth[1:])), warmth
    # the real camera is offset a little, so its masks move with it (but not much)
    assert mask_change[0] == 0.0 and 0 < mask_change[-1] < 0.05


def test_real_effects_per_frame_are_deterministic_but_vary_by_step():
    r, labels = demo_renderer(episodes=1, steps=4, gap=1.0, seed=0, paired=True, **SMALL)
    real = np.flatnonzero(labels["domain"] == "real")
    a, _ = r.render(real[1])
    b, _ = r.render(real[1])
    assert np.array_equal(a, b)
    # same state, different step -> different sensor noise
    r.states[real[2]] = r.states[real[1]]
    c, _ = r.render(real[2])
    diff = np.abs(a.astype(int) - c.astype(int))
    assert 0 < diff.mean() < 10


def test_gaussian_blur_keeps_mass_and_has_the_requested_width():
    f = np.zeros((41, 41, 1), np.float32)
    f[20, 20] = 1.0
    x = np.arange(41) - 20
    for sigma in (0.3, 0.6, 0.9, 1.7):
        out = gaussian_blur(f, sigma)[..., 0]
        assert out.sum() == pytest.approx(1.0, abs=1e-5)
        assert np.sqrt((out.sum(axis=0) * x ** 2).sum()) == pytest.approx(sigma, rel=1e-4)
        assert np.sqrt((out.sum(axis=1) * x ** 2).sum()) == pytest.approx(sigma, rel=1e-4)


# ----------------------------------------------------------------------------- masks
def test_masks_cover_the_gripper_and_a_sensible_area(small_demo):
    fs = small_demo
    h, w, _ = fs.image_shape
    masks = fs.read_masks(np.arange(len(fs)))
    src = fs.source
    for i in range(len(fs)):
        if fs.domain[i] == "sim":
            cam = make_camera(h, w)
        else:
            local = int(fs.episode[i]) - src["episodes"]
            cam = sample_look(src["seed"], local, src["gap"]).camera(h, w)
        s = fs.state[i].astype(np.float64)
        point = hand_point(s[schema.EE_POS], rot_from_6d(s[schema.EE_ROT]))
        (u, v), _ = cam.project(point)
        assert masks[i, int(round(v)), int(round(u))] == 1, f"frame {i}: hand not in mask"
        # the carried leg (task-relevant) is in the mask too
        (u, v), _ = cam.project(s[schema.LEG_POS])
        assert masks[i, int(round(v)), int(round(u))] == 1, f"frame {i}: leg not in mask"
    frac = masks.reshape(len(fs), -1).mean(axis=1)
    assert frac.min() > 0.03 and frac.max() < 0.4
    assert masks[:, :3, :3].sum() == 0          # the wall corner is never task-relevant


# ----------------------------------------------------------------------------- actions
def test_actions_vary_and_are_valid(small_demo):
    a = small_demo.actions
    assert (a.std(axis=0) > 1e-3).all(), a.std(axis=0)
    assert set(np.unique(a[:, 9])) == {-1.0, 1.0}
    r6 = a[:, 3:9].astype(np.float64)
    assert np.allclose(np.linalg.norm(r6[:, :3], axis=1), 1, atol=1e-5)
    assert np.allclose(np.linalg.norm(r6[:, 3:], axis=1), 1, atol=1e-5)
    assert np.allclose((r6[:, :3] * r6[:, 3:]).sum(axis=1), 0, atol=1e-5)
    # each episode follows its own trajectory
    by_ep = [a[small_demo.episode == e] for e in np.unique(small_demo.episode)]
    for x, y in zip(by_ep, by_ep[1:]):
        assert np.abs(x - y).max() > 0.05


def test_action_is_next_state_target():
    fs = _render(episodes=2, steps=10, seed=1, paired=True)
    for e in np.unique(fs.episode):
        rows = np.flatnonzero(fs.episode == e)
        assert np.allclose(fs.actions[rows[:-1], :3], fs.state[rows[1:], :3], atol=1e-6)
        assert np.allclose(fs.actions[rows[:-1], 3:9], fs.state[rows[1:], 3:9], atol=1e-6)


def test_actions_follow_the_scene():
    """Where the gripper closes is where that episode's leg stands; it ends at the tabletop."""
    r, labels = demo_renderer(episodes=12, steps=40, seed=7, **SMALL)
    states, actions = labels["states"], labels["actions"]
    grasp_xy, leg_xy, end_xy, top_xy = [], [], [], []
    for e in np.unique(labels["episode"]):
        rows = np.flatnonzero(labels["episode"] == e)
        close = rows[np.argmax(actions[rows, 9] > 0)]          # first "close" command
        grasp_xy.append(actions[close, :2])
        leg_xy.append(states[rows[0], schema.LEG_POS][:2])      # where the leg stood
        end_xy.append(actions[rows[-1], :2])
        top = states[rows[-1], schema.TOP].astype(np.float64)
        holes = hole_positions(top[:2], top[2])                 # the tabletop's 4 corner holes
        top_xy.append(holes[np.argmin(np.linalg.norm(holes - end_xy[-1], axis=1))])
    grasp_xy, leg_xy = np.array(grasp_xy), np.array(leg_xy)
    end_xy, top_xy = np.array(end_xy), np.array(top_xy)
    assert np.abs(grasp_xy - leg_xy).max() < 0.01              # metres
    assert np.abs(end_xy - top_xy).max() < 0.01                # over a hole of the tabletop
    for k in (0, 1):
        assert np.corrcoef(grasp_xy[:, k], leg_xy[:, k])[0, 1] > 0.95
        assert np.corrcoef(end_xy[:, k], top_xy[:, k])[0, 1] > 0.95


def test_a_linear_probe_on_pixels_learns_the_actions():
    """Even raw pooled pixels carry the actions: a ridge probe beats the mean on new episodes.

    (Closed-form ridge in numpy: importing scikit-learn costs more than the whole test.)
    """
    r, labels = demo_renderer(episodes=24, steps=12, gap=0.0, seed=11, height=64, width=64)
    sim = np.flatnonzero(labels["domain"] == "sim")
    frames = np.stack([r.render(i)[0] for i in sim])
    x = frames.reshape(len(sim), 8, 8, 8, 8, 3).mean(axis=(2, 4)).reshape(len(sim), -1) / 255
    y = labels["actions"][sim]
    train = labels["episode"][sim] < 18                      # 18 episodes to fit, 6 held out
    mx, my = x[train].mean(axis=0), y[train].mean(axis=0)
    xc = x[train] - mx
    coef = np.linalg.solve(xc.T @ xc + 0.1 * np.eye(x.shape[1]), xc.T @ (y[train] - my))
    pred = (x[~train] - mx) @ coef + my
    r2 = 1 - ((pred - y[~train]) ** 2).sum(axis=0) / ((y[~train] - y[~train].mean(axis=0)) ** 2
                                                      ).sum(axis=0)
    named = dict(zip(ACTION_NAMES, r2))
    assert named["pos_x"] > 0.6, named
    assert named["pos_z"] > 0.1 and named["gripper"] > 0.1, named


# ----------------------------------------------------------------------------- pairing
def test_paired_renders_the_same_states(paired_demo):
    fs = paired_demo
    sim, real = fs.indices("sim"), fs.indices("real")
    assert np.array_equal(fs.state[sim], fs.state[real])
    assert np.array_equal(fs.actions[sim], fs.actions[real])
    assert np.array_equal(fs.step[sim], fs.step[real])
    assert np.array_equal(fs.episode[real], fs.episode[sim] + 3)


def test_independent_draws_by_default(small_demo):
    fs = small_demo
    sim, real = fs.state[fs.indices("sim")], fs.state[fs.indices("real")]
    # no real frame repeats a sim state; the layouts (tabletop place) differ too
    d = np.abs(sim[:, None, :] - real[None, :, :]).max(axis=2)
    assert d.min() > 1e-3
    assert not np.isin(real[:, schema.TOP][:, 0], sim[:, schema.TOP][:, 0]).any()


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("kwargs, name", [
    ({"gap": 1.5}, "gap"), ({"gap": -0.1}, "gap"), ({"gap": float("nan")}, "gap"),
    ({"gap": "0.5"}, "gap"), ({"episodes": 0}, "episodes"), ({"episodes": 2.5}, "episodes"),
    ({"steps": 1}, "steps"), ({"seed": -1}, "seed"), ({"height": 32}, "height"),
    ({"width": 63}, "width"), ({"width": True}, "width"), ({"paired": "yes"}, "paired"),
])
def test_bad_parameters_raise_data_error(kwargs, name):
    with pytest.raises(DataError, match=name):
        make_demo(**{"episodes": 1, "steps": 2, **SMALL, **kwargs})


# ----------------------------------------------------------------------------- lazy source
def test_lazy_source_returns_the_eager_pixels():
    eager = _render(episodes=2, steps=5, gap=0.8, seed=9)
    renderer, _ = demo_renderer(episodes=2, steps=5, gap=0.8, seed=9, **SMALL)
    images, masks = RenderedImages(renderer), RenderedImages(renderer, masks=True)
    assert images.shape == (20, 72, 96, 3) and masks.shape == (20, 72, 96)
    idx = np.array([17, 3, 3, 12, 0, 19, 8, -1])
    assert np.array_equal(images.read(idx), eager.read_images(idx))
    assert np.array_equal(masks.read(idx), eager.read_masks(idx))


def test_lazy_source_is_safe_to_read_from_threads():
    from concurrent.futures import ThreadPoolExecutor

    eager = _render(episodes=2, steps=4, gap=1.0, seed=3)
    renderer, _ = demo_renderer(episodes=2, steps=4, gap=1.0, seed=3, **SMALL)
    lazy = RenderedImages(renderer)
    chunks = [np.arange(16)[k::4] for k in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lazy.read, chunks * 3))
    for idx, frames in zip(chunks * 3, results):
        assert np.array_equal(frames, eager.read_images(idx))


def test_large_sets_render_lazily(monkeypatch):
    calls = []
    monkeypatch.setattr(demo, "EAGER_LIMIT_BYTES", 0)
    lazy = _render(episodes=1, steps=4, gap=0.5, seed=1,
                   progress=lambda d, t, m: calls.append((d, t)))
    assert isinstance(lazy.images, RenderedImages) and isinstance(lazy.masks, RenderedImages)
    assert calls == [(8, 8)]
    monkeypatch.undo()
    eager = _render(episodes=1, steps=4, gap=0.5, seed=1)
    assert not isinstance(eager.images, RenderedImages)
    idx = np.arange(8)
    assert np.array_equal(lazy.read_images(idx), eager.read_images(idx))
    assert np.array_equal(lazy.read_masks(idx), eager.read_masks(idx))
    assert lazy.fingerprint == eager.fingerprint


def test_progress_reports_eager_rendering():
    calls = []
    fs = _render(episodes=2, steps=5, progress=lambda d, t, m: calls.append((d, t, m)))
    assert calls[0][:2] == (0, len(fs)) and calls[-1][:2] == (len(fs), len(fs))
    done = [c[0] for c in calls]
    assert done == sorted(done) and all(c[1] == len(fs) for c in calls)
    assert all(isinstance(c[2], str) and c[2] for c in calls)


# ----------------------------------------------------------------------------- geometry
def test_rotation_6d_round_trip_and_ik_link_lengths(small_demo):
    rng = np.random.default_rng(0)
    for _ in range(20):
        rot = gripper_rotation(*rng.uniform(-1, 1, 3))
        assert np.allclose(rot_from_6d(rot6d(rot)), rot, atol=1e-12)
    # every pose the policy commands is reachable: the links keep their lengths
    for s in small_demo.state.astype(np.float64):
        j = arm_joints(s[schema.EE_POS], rot_from_6d(s[schema.EE_ROT]))
        assert np.linalg.norm(j["elbow"] - j["shoulder"]) == pytest.approx(UPPER_ARM, abs=1e-9)
        assert np.linalg.norm(j["wrist"] - j["elbow"]) == pytest.approx(FOREARM, abs=1e-9)
        assert j["elbow"][2] > 0 and j["wrist"][2] > 0           # above the table


#: The digest of the demo's drawing modules' source (:data:`s2r.worlds.demo.dataset.
#: DRAWING_MODULES`) that :data:`s2r.worlds.demo.RENDER_ID` was last checked against. When this
#: test fails, the drawing code changed: if what it draws (pixels, masks, states, actions)
#: changed, give RENDER_ID a new value (cached demo frames are then misses); either way, record
#: the new digest here.
DEMO_SOURCE_DIGEST = "0fd7c721b645fe2c2d434ae7b816f947"


def test_demo_code_is_unchanged_or_its_render_id_was_considered():
    assert demo.source_digest() == DEMO_SOURCE_DIGEST, (
        "the demo's drawing code changed: bump s2r.worlds.demo.RENDER_ID if what it draws "
        f"changed, then set DEMO_SOURCE_DIGEST = {demo.source_digest()!r}")


def test_the_render_id_is_part_of_every_demo_frame_identity(monkeypatch):
    fs = make_demo(episodes=1, steps=4, height=64, width=80)
    monkeypatch.setattr(demo, "RENDER_ID", b"another renderer")
    assert make_demo(episodes=1, steps=4, height=64, width=80).fingerprint != fs.fingerprint


def test_the_demo_worlds_options_are_make_demos_keyword_arguments():
    import inspect

    from s2r.datasets import DEMO_DEFAULTS
    from s2r.worlds import WORLDS

    params = inspect.signature(make_demo).parameters
    assert WORLDS["demo"].options.defaults() == DEMO_DEFAULTS == {
        name: p.default for name, p in params.items() if name != "progress"}
    assert list(WORLDS["demo"].options) == [n for n in params if n != "progress"]

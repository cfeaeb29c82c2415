"""The demo's kinematic one-leg task simulator (s2r.worlds.demo.task)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from s2r.worlds.demo.dataset import demo_renderer
from s2r.worlds.demo.episodes import run_episode
from s2r.worlds.demo.schema import GRIP_CLOSE, GRIP_OPEN, INSERT_DEPTH, LEG_WIDTH
from s2r.worlds.demo.scene import (GRIPPER_OPEN, LEG_HALF, Layout, gripper_rotation,
                                     hole_positions, rot6d, rot_z, sample_layout)
from s2r.worlds.demo.task import (TaskConfig, TaskSim, grasp_point, leg_foot, replay,
                                    turn_toward)
from s2r.worlds.demo.scripted import ScriptedController, rollout


def _layout(leg_yaw: float = 0.3) -> Layout:
    top_xy = np.array([0.15, 0.18])
    return Layout(top_xy=top_xy, top_yaw=0.1, hole_xy=hole_positions(top_xy, 0.1)[2],
                  leg_xy=np.array([-0.2, 0.2]), leg_yaw=leg_yaw)


def _action(pos, yaw, grip) -> np.ndarray:
    return np.concatenate([np.asarray(pos, float), rot6d(gripper_rotation(yaw)), [grip]])


def _grasped_sim(leg_yaw: float = 0.3) -> TaskSim:
    """A simulator whose gripper has just closed on the leg."""
    sim = TaskSim()
    lay = _layout(leg_yaw)
    state = sim.reset(lay)
    state[:3] = grasp_point(sim.leg_pos, sim.leg_rot)
    state[3:9] = rot6d(gripper_rotation(leg_yaw + math.pi / 2))   # another face: also fine
    sim.reset(lay, state)
    for _ in range(3):
        sim.step(_action(state[:3], leg_yaw + math.pi / 2, GRIP_CLOSE))
    assert sim.grasped and sim.width == pytest.approx(LEG_WIDTH)
    return sim


def _scripted(steps: int, n: int, seed: int = 1):
    return [run_episode(np.random.default_rng([seed, k]), steps) for k in range(n)]


# ------------------------------------------------------------------ the scripted policy
@pytest.mark.parametrize("steps", [24, 40])
def test_scripted_policy_succeeds_in_at_least_95_percent_of_layouts(steps):
    episodes = _scripted(steps, 100)
    wins = [replay(ep)[0].success() for ep in episodes]
    assert np.mean(wins) >= 0.95, np.mean(wins)


def test_scripted_policy_closed_loop_succeeds_and_a_wrong_layout_fails():
    wins, wrong, phases = [], [], []
    for k in range(60):
        rng = np.random.default_rng([4, k])
        layout = sample_layout(rng)
        sim = TaskSim()
        sim.reset(layout, rng=rng)
        controller = ScriptedController(layout, rng)
        states, actions = rollout(sim, controller.act, 40)
        assert states.shape == (41, 22) and actions.shape == (40, 10)
        wins.append(sim.success())
        phases.append(controller.phase)
        # the policy of another layout (its leg and hole elsewhere)
        other = sample_layout(np.random.default_rng([4, k, 1]))
        sim.reset(layout, rng=np.random.default_rng(k))
        rollout(sim, ScriptedController(other, np.random.default_rng(k)).act, 40)
        wrong.append(sim.success())
    assert np.mean(wins) >= 0.95, np.mean(wins)
    assert max(phases) == 9                      # it got to the last waypoint (retreat)
    assert np.mean(wrong) <= 0.05


def test_replayed_states_track_the_scripted_states():
    ep = _scripted(40, 1, seed=3)[0]
    sim, states = replay(ep)
    assert states.shape == ep.states.shape and states.dtype == np.float32
    np.testing.assert_allclose(states[0], ep.states[0], atol=1e-6)
    # the speed limits make the arm lag a little behind the plan, never far
    assert np.abs(states[:, :3] - ep.states[:, :3]).max() < 0.08


def test_do_nothing_and_shuffled_actions_fail():
    episodes = _scripted(40, 40, seed=2)
    rng = np.random.default_rng(0)
    still, shuffled, other = [], [], []
    for k, ep in enumerate(episodes):
        sim = TaskSim()
        state = sim.reset(ep.layout, ep.states[0])
        hold = np.concatenate([state[:9], [GRIP_OPEN]])
        for _ in range(len(ep.actions)):
            sim.step(hold)
        still.append(sim.success())
        perm = ep.actions[rng.permutation(len(ep.actions))]
        shuffled.append(replay(type(ep)(ep.layout, ep.states, perm))[0].success())
        # the right actions for another layout
        wrong = episodes[(k + 1) % len(episodes)].actions
        other.append(replay(type(ep)(ep.layout, ep.states, wrong))[0].success())
    assert not any(still)
    assert np.mean(shuffled) <= 0.05 and np.mean(other) <= 0.05


# ------------------------------------------------------------------ step rules
def test_position_speed_limit_and_workspace():
    cfg = TaskConfig(max_move=0.05)
    sim = TaskSim(cfg)
    start = sim.reset(_layout())
    target = start[:3] + np.array([1.0, 0.0, 0.0])
    rot = start[3:9]                       # unchanged rotation: the gripper's own
    s1 = sim.step(np.concatenate([target, rot, [GRIP_OPEN]]))
    assert np.linalg.norm(s1[:3] - start[:3]) == pytest.approx(0.05, abs=1e-6)
    assert s1[0] - start[0] == pytest.approx(0.05, abs=1e-6)
    for _ in range(40):
        s = sim.step(np.concatenate([target, rot, [GRIP_OPEN]]))
    assert s[0] == pytest.approx(0.60, abs=1e-6)   # clamped to the workspace
    near = s[:3] + np.array([0.0, 0.01, 0.0])
    s = sim.step(np.concatenate([near, rot, [GRIP_OPEN]]))
    np.testing.assert_allclose(s[:3], near, atol=1e-6)   # within the limit: reached


def test_rotation_speed_limit():
    cfg = TaskConfig(max_turn=0.2)
    sim = TaskSim(cfg)
    sim.reset(_layout(), rng=np.random.default_rng(0))
    before = sim.ee_rot.copy()
    s = sim.step(np.concatenate([sim.ee_pos, rot6d(before @ rot_z(1.0)), [GRIP_OPEN]]))
    delta = sim.ee_rot @ before.T
    assert math.acos((np.trace(delta) - 1) / 2) == pytest.approx(0.2, abs=1e-6)
    assert s.shape == (22,)
    for _ in range(5):
        sim.step(np.concatenate([sim.ee_pos, rot6d(before @ rot_z(1.0)), [GRIP_OPEN]]))
    np.testing.assert_allclose(sim.ee_rot, before @ rot_z(1.0), atol=1e-9)
    np.testing.assert_allclose(turn_toward(before, before, 0.1), before)


def test_grasp_and_carry():
    sim = _grasped_sim()
    leg0, ee0 = sim.leg_pos.copy(), sim.ee_pos.copy()
    yaw = math.atan2(sim.ee_rot[1, 0], sim.ee_rot[0, 0])
    up = ee0 + np.array([0.03, 0.0, 0.08])
    s = sim.step(_action(up, yaw, GRIP_CLOSE))
    np.testing.assert_allclose(s[10:13], leg0 + (up - ee0), atol=1e-6)   # follows rigidly
    assert s[9] == pytest.approx(LEG_WIDTH)


def test_no_grasp_when_off_the_leg_or_badly_turned():
    lay = _layout(0.3)
    # 3 cm beside the grasp point
    sim = TaskSim()
    state = sim.reset(lay)
    state[:3] = grasp_point(sim.leg_pos, sim.leg_rot) + np.array([0.03, 0.0, 0.0])
    sim.reset(lay, state)
    for _ in range(3):
        sim.step(_action(state[:3], 0.3, GRIP_CLOSE))
    assert not sim.grasped and sim.width == 0.0
    # then moving onto the leg with the fingers shut grasps nothing
    on = grasp_point(sim.leg_pos, sim.leg_rot)
    for _ in range(3):
        sim.step(_action(on, 0.3, GRIP_CLOSE))
    assert not sim.grasped
    up = sim.step(_action(on + [0, 0, 0.1], 0.3, GRIP_CLOSE))
    np.testing.assert_allclose(up[10:13], [-0.2, 0.2, LEG_HALF[2]])   # the leg stays
    # on the grasp point but the fingers turned 45 degrees to the faces
    state[:3] = on
    state[3:9] = rot6d(gripper_rotation(0.3 + math.pi / 4))
    sim.reset(lay, state)
    for _ in range(3):
        sim.step(_action(on, 0.3 + math.pi / 4, GRIP_CLOSE))
    assert not sim.grasped


def test_release_high_over_the_table_lies_down_low_stands():
    sim = _grasped_sim()
    yaw = math.atan2(sim.ee_rot[1, 0], sim.ee_rot[0, 0])
    high = np.array([-0.3, 0.35, 0.30])
    for _ in range(5):
        sim.step(_action(high, yaw, GRIP_CLOSE))
    s = sim.step(_action(high, yaw, GRIP_OPEN))
    assert not sim.grasped
    assert s[12] == pytest.approx(LEG_HALF[0])                    # lying on the table
    assert abs(sim.leg_rot[2, 2]) < 1e-9                          # its axis horizontal
    assert not sim.success()
    # released just above the table, upright: it stands where it was let go
    sim = _grasped_sim()
    low = sim.ee_pos + np.array([-0.05, 0.05, 0.01])
    for _ in range(3):
        sim.step(_action(low, yaw, GRIP_CLOSE))
    foot = leg_foot(sim.leg_pos, sim.leg_rot)
    s = sim.step(_action(low, yaw, GRIP_OPEN))
    np.testing.assert_allclose(s[10:13], [foot[0], foot[1], LEG_HALF[2]], atol=1e-6)
    assert s[9] > LEG_WIDTH


def _carry_over_hole(sim: TaskSim, height: float) -> float:
    """Carry the held leg so its foot is ``height`` above the seat of the target hole."""
    yaw = math.atan2(sim.ee_rot[1, 0], sim.ee_rot[0, 0])
    foot_from_ee = leg_foot(sim.leg_pos, sim.leg_rot) - sim.ee_pos
    seat = sim.layout.top_z - INSERT_DEPTH
    goal = np.array([*sim.target_hole, seat + height]) - foot_from_ee
    for _ in range(12):
        sim.step(_action(goal, yaw, GRIP_CLOSE))
    return yaw


def test_release_over_the_hole_stays_in_it_and_a_twist_makes_success():
    sim = _grasped_sim()
    yaw = _carry_over_hole(sim, 0.015)       # just above the hole, not yet in
    s = sim.step(_action(sim.ee_pos, yaw, GRIP_OPEN))
    foot = leg_foot(sim.leg_pos, sim.leg_rot)
    np.testing.assert_allclose(foot[:2], sim.target_hole, atol=1e-9)
    assert foot[2] == pytest.approx(sim.layout.top_z - INSERT_DEPTH)
    assert sim.seated() and s[9] > LEG_WIDTH
    assert not sim.success()                 # in the hole but not screwed in
    # inserted while held, twisted, released: success
    sim = _grasped_sim()
    yaw = _carry_over_hole(sim, 0.0)
    assert sim.seated() and not sim.success()   # still held
    for k in range(1, 4):
        sim.step(_action(sim.ee_pos, yaw + 0.25 * k, GRIP_CLOSE))
    assert sim.turn == pytest.approx(0.75, abs=1e-6)
    sim.step(_action(sim.ee_pos, yaw + 0.75, GRIP_OPEN))
    assert sim.success()
    for _ in range(3):                          # retreating keeps it
        sim.step(_action(sim.ee_pos + [0, 0, 0.1], yaw + 0.75, GRIP_OPEN))
    assert sim.success()


def test_release_too_high_or_beside_the_hole_misses_it():
    sim = _grasped_sim()
    yaw = _carry_over_hole(sim, 0.10)
    sim.step(_action(sim.ee_pos, yaw, GRIP_OPEN))
    assert not sim.seated()
    assert sim.leg_pos[2] == pytest.approx(sim.layout.top_z + LEG_HALF[0])  # on the tabletop
    sim = _grasped_sim()
    yaw = _carry_over_hole(sim, 0.0)
    sim.step(_action(sim.ee_pos + [0.03, 0.0, 0.0], yaw, GRIP_CLOSE))
    assert not sim.seated()
    sim.step(_action(sim.ee_pos, yaw, GRIP_OPEN))
    assert not sim.seated() and not sim.success()


def test_bad_actions_and_states_are_refused():
    sim = TaskSim()
    with pytest.raises(RuntimeError):
        sim.step(np.zeros(10))
    sim.reset(_layout())
    with pytest.raises(ValueError):
        sim.step(np.zeros(9))
    with pytest.raises(ValueError):
        sim.step(np.full(10, np.nan))
    with pytest.raises(ValueError):
        sim.reset(_layout(), np.zeros(5))
    before = sim.ee_rot.copy()
    sim.step(np.zeros(10))                   # a degenerate 6-D rotation leaves it alone
    np.testing.assert_allclose(sim.ee_rot, before)
    assert sim.width == pytest.approx(GRIPPER_OPEN)


def test_random_reset_is_seeded():
    a, b = TaskSim.random(5), TaskSim.random(5)
    np.testing.assert_array_equal(a.state, b.state)
    assert not np.array_equal(a.state, TaskSim.random(6).state)


# ------------------------------------------------------------------ rendering
def test_render_matches_the_demo_renderer_in_both_looks():
    renderer, labels = demo_renderer(episodes=1, steps=6, gap=0.7, seed=3, height=64,
                                     width=80)
    for look, index in (("sim", 0), ("real", 6)):
        sim = TaskSim()
        sim.reset(labels["layouts"][(look, 0)], labels["states"][index])
        image, mask = sim.render(look, gap=0.7, seed=3, height=64, width=80,
                                 state=labels["states"][index])
        want_image, want_mask = renderer.render(index)
        np.testing.assert_array_equal(image, want_image)
        np.testing.assert_array_equal(mask, want_mask)
    # the simulator's own state renders too, and moves when the state does
    first, _ = sim.render("real", gap=0.7, seed=3, height=64, width=80)
    sim.step(np.concatenate([sim.ee_pos + [0.1, 0, 0.05], rot6d(sim.ee_rot), [GRIP_OPEN]]))
    second, mask = sim.render("real", gap=0.7, seed=3, height=64, width=80)
    assert first.shape == (64, 80, 3) and mask.any()
    assert not np.array_equal(first, second)
    with pytest.raises(ValueError):
        sim.render("photo")


def test_the_compliant_gripper_captures_centres_and_squares_up_an_offset_leg():
    lay = _layout(0.3)
    offset, turn = np.array([0.02, -0.01, 0.0]), 0.5
    for config, grasps in ((TaskConfig(), False), (TaskConfig.compliant(), True)):
        sim = TaskSim(config)
        state = sim.reset(lay)
        on = grasp_point(sim.leg_pos, sim.leg_rot)
        state[:3] = on + offset
        state[3:9] = rot6d(gripper_rotation(0.3 + turn))
        sim.reset(lay, state)
        for _ in range(3):
            sim.step(_action(state[:3], 0.3 + turn, GRIP_CLOSE))
        assert sim.grasped is grasps
    # grasped: the leg's grasp point moved under the fingers, its faces turned to theirs
    np.testing.assert_allclose(grasp_point(sim.leg_pos, sim.leg_rot)[:2], sim.ee_pos[:2],
                               atol=1e-9)
    leg_yaw = math.atan2(sim.leg_rot[1, 0], sim.leg_rot[0, 0])
    assert leg_yaw == pytest.approx(0.3 + turn)
    # beyond the capture it still misses
    sim = TaskSim(TaskConfig.compliant())
    state = sim.reset(lay)
    state[:3] = grasp_point(sim.leg_pos, sim.leg_rot) + np.array([0.035, 0.0, 0.0])
    sim.reset(lay, state)
    for _ in range(3):
        sim.step(_action(state[:3], 0.3, GRIP_CLOSE))
    assert not sim.grasped

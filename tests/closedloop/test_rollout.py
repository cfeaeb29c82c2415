"""Closed-loop evaluation: the reactive expert, demonstrations, batched rollouts, and a policy
trained on the state against one trained on shuffled actions (issue 14's ground truth)."""

import numpy as np
import pytest

from s2r.datasets.demo.scene import hole_positions
from s2r.closedloop.sim.expert import TARGET_CORNER, ReactiveExpert
from s2r.errors import MetricError
from s2r.closedloop.policy.bc import fit_policy
from s2r.datasets.demo import PROPRIO_COLUMNS
from s2r.closedloop.rollout import demonstrations, run_rollouts

EXPERT = ReactiveExpert()


def expert_act(frames, states):
    assert frames.ndim == 4 and frames.shape[0] == states.shape[0]
    return EXPERT.act_batch(states)


@pytest.mark.parametrize("look", ["sim", "real"])
def test_the_expert_succeeds_in_at_least_95_percent_of_layouts_in_both_looks(look):
    r = run_rollouts(expert_act, look=look, gap=1.0, n_rollouts=60, horizon=40, height=64,
                     width=64, seed=5)
    assert r.rate >= 0.95
    assert r.steps[r.success].max() <= 20          # the horizon is not what decides
    low, high = r.interval()
    assert low <= r.rate <= high


def test_doing_nothing_never_succeeds_and_rollouts_are_seeded():
    def still(frames, states):
        return np.concatenate([states[:, 0:9], -np.ones((len(states), 1))], axis=1)

    r = run_rollouts(still, look="real", gap=0.5, n_rollouts=8, horizon=10, height=64, width=64)
    assert r.rate == 0.0 and (r.steps == 10).all()
    a = run_rollouts(expert_act, look="real", gap=0.5, n_rollouts=4, horizon=20, height=64,
                     width=64, seed=3, record=1)
    b = run_rollouts(expert_act, look="real", gap=0.5, n_rollouts=4, horizon=20, height=64,
                     width=64, seed=3, record=1)
    np.testing.assert_array_equal(a.record["frames"], b.record["frames"])
    np.testing.assert_array_equal(a.steps, b.steps)
    assert a.record["frames"].shape == (a.steps[1], 64, 64, 3)   # ends at its success


def test_the_real_look_differs_from_sim_only_by_the_gap():
    def frames_of(look, gap):
        return run_rollouts(expert_act, look=look, gap=gap, n_rollouts=2, horizon=3, height=64,
                            width=64, record=0).record["frames"].astype(float)

    sim = frames_of("sim", 0.0)
    assert np.abs(frames_of("real", 0.0) - sim).mean() < np.abs(frames_of("real", 1.0) - sim
                                                                 ).mean()


def test_the_real_look_at_gap_0_is_the_sim_look_pixel_for_pixel():
    # what lets encoder_rollouts reuse the sim look's outcome at gap 0: a policy reading the
    # pixels acts the same, so every rollout has the same frames, stages and steps
    def pixel_act(frames, states):
        actions = np.array(EXPERT.act_batch(states), dtype=np.float64)
        actions[:, 0] += (frames.reshape(len(frames), -1).mean(axis=1) - 128.0) / 128.0 * 0.004
        return actions

    runs = [run_rollouts(pixel_act, look=look, gap=0.0, n_rollouts=6, horizon=12, height=64,
                         width=64, seed=4, record=2) for look in ("sim", "real")]
    np.testing.assert_array_equal(runs[0].record["frames"], runs[1].record["frames"])
    for field in ("success", "steps", "stages"):
        np.testing.assert_array_equal(getattr(runs[0], field), getattr(runs[1], field))


def test_the_target_hole_is_the_fixed_corner_of_the_tabletop():
    demo = next(demonstrations(1, 30, height=64, width=64, seed=2))
    assert demo.success
    top = demo.states[0, 19:22]
    hole = hole_positions(top[:2], float(top[2]))[TARGET_CORNER]
    leg = demo.states[-1, 10:12]
    assert np.linalg.norm(leg - hole) < 0.02


def test_bad_policies_and_arguments_are_refused():
    with pytest.raises(MetricError, match="actions of shape"):
        run_rollouts(lambda f, s: np.zeros((len(s), 3)), look="sim", n_rollouts=2, horizon=2,
                     height=64, width=64)
    with pytest.raises(MetricError, match="look"):
        run_rollouts(expert_act, look="photo", n_rollouts=2, horizon=2)
    with pytest.raises(MetricError, match="record"):
        run_rollouts(expert_act, look="sim", n_rollouts=2, horizon=2, record=5)


def _state_policy(shuffle: bool):
    demos = list(demonstrations(60, 24, height=64, width=64, seed=1))
    states = np.concatenate([d.states for d in demos])
    actions = np.concatenate([d.actions for d in demos])
    if shuffle:
        actions = actions[np.random.default_rng(0).permutation(len(actions))]
    episode = np.repeat(np.arange(len(demos)), [len(d.states) for d in demos])
    policy = fit_policy(states, states[:, PROPRIO_COLUMNS], actions, episode, kind="mlp")
    return lambda frames, s: policy.predict(s, s[:, PROPRIO_COLUMNS])


@pytest.mark.slow
def test_a_policy_on_the_state_succeeds_far_above_one_on_shuffled_actions():
    kw = dict(look="real", gap=1.0, n_rollouts=30, horizon=40, height=64, width=64, seed=9)
    good = run_rollouts(_state_policy(False), **kw)
    bad = run_rollouts(_state_policy(True), **kw)
    assert good.rate >= 0.6
    assert bad.rate <= 0.05
    assert good.interval()[0] > bad.interval()[1]


def test_the_expert_climbs_every_stage_and_doing_nothing_none():
    from s2r.closedloop.rollout import STAGES

    r = run_rollouts(expert_act, look="sim", n_rollouts=6, horizon=30, height=32, width=32,
                     seed=4)
    assert r.success.all() and (r.stages == len(STAGES)).all()
    assert r.progress == 1.0 and r.progress_interval()[1] == 1.0
    assert r.stage_rates() == [1.0] * len(STAGES)

    def still(frames, states):
        return np.concatenate([states[:, 0:9], -np.ones((len(states), 1))], axis=1)

    n = run_rollouts(still, look="sim", n_rollouts=6, horizon=4, height=32, width=32, seed=4)
    assert n.stages.max() <= 1 and n.progress <= 1 / len(STAGES)
    low, high = n.progress_interval()
    assert low <= n.progress <= high


def test_stages_are_reached_in_order_along_an_expert_episode():
    from s2r.closedloop.sim.expert import eval_layout
    from s2r.closedloop.sim.task import TaskSim
    from s2r.closedloop.rollout import EVAL_CONFIG, stage_of

    rng = np.random.default_rng(11)
    sim = TaskSim(EVAL_CONFIG)
    sim.reset(eval_layout(rng), rng=rng)
    seen = [stage_of(sim)]
    for _ in range(30):
        sim.step(EXPERT.act(sim.state))
        seen.append(stage_of(sim))
        if sim.success():
            break
    firsts = [seen.index(k) for k in range(1, 7)]     # every stage is reached ...
    assert firsts == sorted(firsts)                   # ... in the task's order
    assert seen[-1] == 6


def test_state_demonstrations_are_seeded_and_labelled_by_the_expert():
    from s2r.closedloop.rollout import state_demonstrations

    S, A, E = state_demonstrations(4, 24, seed=3)
    S2, A2, E2 = state_demonstrations(4, 24, seed=3)
    np.testing.assert_array_equal(S, S2)
    np.testing.assert_array_equal(A, EXPERT.act_batch(S))
    assert set(E) == {0, 1, 2, 3}
    Sn, An, _ = state_demonstrations(4, 24, seed=3, noise=0.01)
    np.testing.assert_array_equal(An, EXPERT.act_batch(Sn))   # clean labels under noise
    assert not np.array_equal(Sn[:len(S)], S[:len(Sn)])


def test_an_mlp_policy_survives_the_array_round_trip():
    from s2r.closedloop.policy.bc import policy_from_array

    rng = np.random.default_rng(0)
    Z, P = rng.normal(size=(40, 5)), rng.normal(size=(40, 3))
    Y = Z[:, :2] + P[:, :1]
    pol = fit_policy(Z, P, Y, np.arange(40) // 5, kind="mlp", max_epochs=3, hidden=(8,))
    back = policy_from_array(pol.to_array())
    np.testing.assert_allclose(back.predict(Z, P), pol.predict(Z, P), rtol=1e-5, atol=1e-6)


def test_a_policy_ensemble_acts_with_its_members_mean_and_survives_the_array_round_trip():
    from s2r.closedloop.policy.bc import PolicyEnsemble, policy_from_array

    rng = np.random.default_rng(1)
    Z, P = rng.normal(size=(40, 5)), rng.normal(size=(40, 3))
    Y = Z[:, :2] + P[:, :1]
    members = [fit_policy(Z, P, Y, np.arange(40) // 5, kind="mlp", max_epochs=3, hidden=(8,),
                          seed=s) for s in (0, 1, 2)]
    ens = PolicyEnsemble(members)
    mean = np.mean([m.predict(Z, P) for m in members], axis=0)
    np.testing.assert_allclose(ens.predict(Z, P), mean, rtol=1e-6)
    assert not np.allclose(members[0].predict(Z, P), mean, atol=1e-4)   # members differ
    back = policy_from_array(ens.to_array())
    assert isinstance(back, PolicyEnsemble) and len(back.members) == 3 and back.n_embed == 5
    np.testing.assert_allclose(back.predict(Z, P), mean, rtol=1e-5, atol=1e-6)
    with pytest.raises(MetricError, match="ensemble"):
        policy_from_array(ens.to_array()[:-1])


def test_the_shared_controls_first_member_is_the_single_mlp():
    from s2r.closedloop.policy.two_stage import fit_state_control, member_seed

    one = fit_state_control(6, steps=16, seed=3, max_epochs=3)
    three = fit_state_control(6, steps=16, seed=3, members=3, max_epochs=3)
    np.testing.assert_array_equal(three.members[0].to_array(), one.to_array())
    assert len({member_seed(3, j) for j in range(3)} | {member_seed(4, 1)}) == 4
    assert not np.array_equal(three.members[1].to_array(), one.to_array())
    with pytest.raises(MetricError, match="members"):
        fit_state_control(6, steps=16, seed=3, members=0)

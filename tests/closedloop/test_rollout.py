"""Closed-loop rollouts (s2r.closedloop.rollout) in a world's task -- the demo's here: the
expert succeeds, doing nothing does not, looks differ only in appearance, a policy trained on
the state succeeds far above one on shuffled actions (issue 14's ground truth)."""

import numpy as np
import pytest

from s2r.closedloop.policy.bc import fit_policy
from s2r.closedloop.rollout import run_rollouts as _run_rollouts
from s2r.errors import MetricError
from s2r.worlds import WORLDS
from s2r.worlds.demo.evaluation import demonstrations
from s2r.worlds.demo.expert import ReactiveExpert

TASK = WORLDS["demo"].task({})
PROPRIO = TASK.columns.proprio_of
STAGES = TASK.stages


def run_rollouts(act, **kw):
    return _run_rollouts(act, TASK, **kw)


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
    policy = fit_policy(states, PROPRIO(states), actions, episode, kind="mlp")
    return lambda frames, s: policy.predict(s, PROPRIO(s))


@pytest.mark.slow
def test_a_policy_on_the_state_succeeds_far_above_one_on_shuffled_actions():
    kw = dict(look="real", gap=1.0, n_rollouts=30, horizon=40, height=64, width=64, seed=9)
    good = run_rollouts(_state_policy(False), **kw)
    bad = run_rollouts(_state_policy(True), **kw)
    assert good.rate >= 0.6
    assert bad.rate <= 0.05
    assert good.interval()[0] > bad.interval()[1]


def test_the_expert_climbs_every_stage_and_doing_nothing_none():
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

    one = fit_state_control(TASK, 6, steps=16, seed=3, max_epochs=3)
    three = fit_state_control(TASK, 6, steps=16, seed=3, members=3, max_epochs=3)
    np.testing.assert_array_equal(three.members[0].to_array(), one.to_array())
    assert len({member_seed(3, j) for j in range(3)} | {member_seed(4, 1)}) == 4
    assert not np.array_equal(three.members[1].to_array(), one.to_array())
    with pytest.raises(MetricError, match="members"):
        fit_state_control(TASK, 6, steps=16, seed=3, members=0)


def test_run_rollouts_resets_a_stateful_policy_and_names_the_rollout_of_every_row():
    expert, seen = ReactiveExpert(), []

    class Stateful:
        def reset(self, n):
            seen.append(("reset", n))

        def __call__(self, frames, states, rows):
            seen.append(tuple(int(r) for r in rows))
            return expert.act_batch(states)

    r = run_rollouts(Stateful(), look="sim", n_rollouts=3, horizon=30, height=32, width=32,
                     seed=2)
    assert seen[0] == ("reset", 3) and seen[1] == (0, 1, 2)
    assert r.success.all()
    # rows shrink as rollouts succeed, and only the unfinished ones are named
    assert len(seen[-1]) < 3

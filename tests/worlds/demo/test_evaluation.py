"""The demo's evaluation task (s2r.worlds.demo.evaluation): its target hole, its stages in
order, seeded state-only demonstrations, and its batch of rollouts as the protocol says."""

import numpy as np

from s2r.worlds.demo.evaluation import (EVAL_CONFIG, STAGES, DemoBatch, demonstrations,
                                        stage_of, state_demonstrations)
from s2r.worlds.demo.expert import TARGET_CORNER, ReactiveExpert, eval_layout
from s2r.worlds.demo.scene import hole_positions
from s2r.worlds.demo.task import TaskSim

EXPERT = ReactiveExpert()


def test_the_target_hole_is_the_fixed_corner_of_the_tabletop():
    demo = next(demonstrations(1, 30, height=64, width=64, seed=2))
    assert demo.success
    top = demo.states[0, 19:22]
    hole = hole_positions(top[:2], float(top[2]))[TARGET_CORNER]
    leg = demo.states[-1, 10:12]
    assert np.linalg.norm(leg - hole) < 0.02


def test_stages_are_reached_in_order_along_an_expert_episode():
    rng = np.random.default_rng(11)
    sim = TaskSim(EVAL_CONFIG)
    sim.reset(eval_layout(rng), rng=rng)
    seen = [stage_of(sim)]
    for _ in range(30):
        sim.step(EXPERT.act(sim.state))
        seen.append(stage_of(sim))
        if sim.success():
            break
    firsts = [seen.index(k) for k in range(1, len(STAGES) + 1)]   # every stage is reached ...
    assert firsts == sorted(firsts)                               # ... in the task's order
    assert seen[-1] == len(STAGES) == 6


def test_state_demonstrations_are_seeded_and_labelled_by_the_expert():
    S, A, E = state_demonstrations(4, 24, seed=3)
    S2, A2, E2 = state_demonstrations(4, 24, seed=3)
    np.testing.assert_array_equal(S, S2)
    np.testing.assert_array_equal(A, EXPERT.act_batch(S))
    assert set(E) == {0, 1, 2, 3}
    Sn, An, _ = state_demonstrations(4, 24, seed=3, noise=0.01)
    np.testing.assert_array_equal(An, EXPERT.act_batch(Sn))   # clean labels under noise
    assert not np.array_equal(Sn[:len(S)], S[:len(Sn)])


def test_a_batch_steps_only_the_rows_asked_for_and_reports_their_stage_and_success():
    batch = DemoBatch(3, look="real", gap=0.5, seed=4, height=32, width=32)
    start = batch.states([0, 1, 2])
    assert start.shape == (3, 22) and batch.frames([2, 0]).shape == (2, 32, 32, 3)
    for _ in range(30):
        batch.step([1], EXPERT.act_batch(batch.states([1])))
    np.testing.assert_array_equal(batch.states([0, 2]), start[[0, 2]])   # untouched
    assert batch.success([0, 1, 2]).tolist() == [False, True, False]
    assert batch.stage([1, 0]).tolist()[0] == len(STAGES)
    batch.close()
    # rollout k's layout is the same in every look and gap
    other = DemoBatch(3, look="sim", gap=0.0, seed=4, height=32, width=32)
    np.testing.assert_array_equal(other.states([0, 1, 2]), start)

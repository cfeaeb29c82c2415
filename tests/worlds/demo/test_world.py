"""The demo world's task identity: pinned, and guarded by the digest of the code that runs it."""

from __future__ import annotations

from s2r.worlds.demo import world

#: The digest of the demo's task modules (every module of s2r/worlds/demo but the drawing ones:
#: s2r.worlds.demo.world.task_source_digest) that s2r.worlds.demo.world.TASK_ID was last
#: checked against. When this test fails, the task's code changed: if what it computes changed
#: (the simulator, expert, stages, rollouts, memory, controls' frames), give TASK_ID a new value
#: (cached rollouts, demonstrations and controls are then misses); either way, record the new
#: digest here.
DEMO_TASK_SOURCE_DIGEST = "1e4c11a416b3717700a092e0743fc3ec"


def test_demo_task_code_is_unchanged_or_its_task_id_was_considered():
    assert world.task_source_digest() == DEMO_TASK_SOURCE_DIGEST, (
        "the demo's task code changed: bump s2r.worlds.demo.world.TASK_ID if what it computes "
        f"changed, then set DEMO_TASK_SOURCE_DIGEST = {world.task_source_digest()!r}")


def test_the_task_identity_is_pinned():
    """Cache keys of the demo's rollouts and demonstrations stay those written before."""
    assert world.WORLD.task({}).identity() == world.TASK_ID == "c599cfd8f2195c47"


def test_the_world_names_its_task_and_trains_its_controls_on_it():
    w = world.WORLD
    assert w.tasks == () and w.task_title() == "One-leg insertion"
    assert w.control_task({}) is w.task({})

"""The closed loop: policies on embeddings, rollouts and validation, in any world's task.

Scores are proxies; this package measures the thing they stand for in a simulated world
(:mod:`s2r.worlds`; the built-in demo today). A policy is trained on an encoder's **sim**
embeddings and deployed closed loop in the world's **real** look; its success and graded
progress are the ground truth the scores are ranked against. The package takes a world's task
(:class:`~s2r.worlds.base.SimTask`, through its dataset spec) and never names a world. Layers,
bottom up (``tests/tools/import_graph.py`` checks them):

- :mod:`~s2r.closedloop.policy` -- behaviour cloning on embeddings (``bc``: ridge / MLP;
  ``two_stage``: a probe reads the task state, a shared control MLP acts), arrays in;
- :mod:`~s2r.closedloop.rollout` -- batched closed-loop rollouts of a task, graded by its
  stages;
- :mod:`~s2r.closedloop.encoder_rollouts` and :mod:`~s2r.closedloop.validation` -- the
  pipeline step (cached): a policy per encoder, rollouts per look and gap, the report that
  ranks the scores against deployment, a typed :class:`ValidationReport` (:mod:`.report`:
  its JSON, and the one checked reader of a report file).
"""

from s2r.closedloop.report import ValidationReport

__all__ = ["ValidationReport"]

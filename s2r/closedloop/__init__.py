"""The closed loop: the demo's task simulator, policies on embeddings, rollouts, validation.

Scores are proxies; this package measures the thing they stand for on the built-in demo.
A policy is trained on an encoder's **sim** embeddings and deployed closed loop in the demo's
**real** look; its success and graded progress are the ground truth the scores are ranked
against. Layers, bottom up (``tests/tools/import_graph.py`` checks them):

- :mod:`~s2r.closedloop.sim` -- the kinematic task simulator (``task``, ``geometry``), its
  scripted and reactive expert controllers (``scripted``, ``expert``), and the domain-randomised
  frames the ``simcnn-dr*`` controls train on (``dr_frames``); beside the dataset layer;
- :mod:`~s2r.closedloop.policy` -- behaviour cloning on embeddings (``bc``: ridge / MLP;
  ``two_stage``: a probe reads the task state, a shared control MLP acts), pure arrays in;
- :mod:`~s2r.closedloop.rollout` -- demonstrations, batched closed-loop rollouts, task stages;
- :mod:`~s2r.closedloop.encoder_rollouts` and :mod:`~s2r.closedloop.validation` -- the
  pipeline step (cached): a policy per encoder, rollouts per look and gap, the report that
  ranks the scores against deployment, a typed :class:`ValidationReport` (:mod:`.report`:
  its JSON, and the one checked reader of a report file).
"""

from s2r.closedloop.report import ValidationReport

__all__ = ["ValidationReport"]

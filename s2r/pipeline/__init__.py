"""The pipeline: dataset -> embeddings -> scores / projections / saliency, through the cache.

The layers below are pure functions of arrays and encoders (:mod:`s2r.metrics`,
:mod:`s2r.projection`, :mod:`s2r.saliency`); this package is where a FrameSet meets the
encoder registry, the embedding loop and the disk cache. The CLI and the app call these entry
points:

- :func:`embed_frameset` -- embeddings of a FrameSet (:mod:`s2r.embed`, cached);
- :func:`score_encoder`, :func:`score_encoders` -- score records (:mod:`.scores`, cached);
- :func:`project_frameset` -- t-SNE map and mixing number (:mod:`.projection`, cached);
- :func:`pair_saliency` -- saliency maps of sim/real frame pairs (:mod:`.saliency`);
- :func:`rollout_saliency` -- saliency of a recorded closed-loop rollout's frame and of the
  same state in the sim look, and :func:`rollout_step_frames`, that frame in both looks
  (:mod:`.rollout_saliency`).
"""

from s2r.embed import embed_frameset
from s2r.pipeline.projection import project_frameset
from s2r.pipeline.rollout_saliency import rollout_saliency, rollout_step_frames
from s2r.pipeline.saliency import pair_saliency
from s2r.pipeline.scores import score_encoder, score_encoders

__all__ = ["embed_frameset", "score_encoder", "score_encoders", "project_frameset",
           "pair_saliency", "rollout_saliency", "rollout_step_frames"]

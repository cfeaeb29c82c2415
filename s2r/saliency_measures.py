"""Former home of :mod:`s2r.saliency.measures` (focus on a mask, map agreement); kept so that
``from s2r.saliency_measures import ...`` goes on working. New code imports
:mod:`s2r.saliency.measures` (or the same names from :mod:`s2r.saliency`)."""

from s2r.saliency.measures import (  # noqa: F401
    AGREEMENT_SIZE, Focus, downsample, encoder_agreement, focus_score, map_agreement,
    pair_measures, sim_real_agreement)

__all__ = ["AGREEMENT_SIZE", "Focus", "downsample", "encoder_agreement", "focus_score",
           "map_agreement", "pair_measures", "sim_real_agreement"]

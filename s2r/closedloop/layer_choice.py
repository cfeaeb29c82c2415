"""Does the best-scoring layer deploy better? ``validate --layers best``.

For every image encoder and gap, the layer is **chosen on the frames only**: every layer of the
encoder is scored on the world's sim/real dataset at that gap
(:func:`s2r.pipeline.layers.score_layers`) and the best one on the choosing score is taken
(:func:`s2r.metrics.layers.best_layers`; a tie keeps the final layer). No rollout is looked at.
Then a policy is trained on that layer's embeddings of the same expert demonstrations and
deployed in the real look at that gap (:func:`~s2r.closedloop.encoder_rollouts.encoder_rollouts`
with ``layer``; its own cache keys), on the same seeded layouts as the final layer's policy;
where the choice is the final layer, its outcome is the final layer's. The section reports, per
encoder and gap, real success and progress at the final layer and at the chosen one with their
intervals, and whether the choice helped across encoders: the mean paired difference (chosen -
final) with a two-level bootstrap interval (:func:`s2r.metrics.layers.paired_effect`), over all
image encoders (what the procedure does) and over those whose choice changed (where it acted),
per gap and over all gaps.

Takes a world's spec, never names a world.
"""

from __future__ import annotations

from typing import Optional, Sequence

from s2r.closedloop.encoder_rollouts import RolloutParams, encoder_rollouts
from s2r.closedloop.outcome import Outcome, outcome_columns
from s2r.metrics.layers import best_layers, paired_effect
from s2r.progress import ProgressCallback, report

__all__ = ["choose_layers", "layer_validation"]

_OUTCOME_FIELDS = {"success": "successes", "progress": "progress"}


def choose_layers(framesets: dict, encoder_id: str, *, score: str, score_params, cache,
                  device=None, settings=None,
                  progress: Optional[ProgressCallback] = None) -> dict:
    """``{gap: best_layers row + layer_count}``: each gap's choice for ``encoder_id``, made on
    that gap's dataset ``framesets[gap]`` by ``score``."""
    from s2r.pipeline.layers import score_layers

    out = {}
    for gap, frameset in framesets.items():
        records = score_layers(frameset, encoder_id, "all", params=score_params, cache=cache,
                               device=device, progress=progress, settings=settings)
        rows = best_layers(records, score, ci=score_params.ci)
        final = records[-1]
        row = rows[0] if rows else {"best_layer": final["layer"], "best_is_final": True,
                                    "best_index": final["layer_index"], "best_depth": 1.0,
                                    "best_estimate": None, "final_estimate": None,
                                    "difference": None, "difference_ci_low": None,
                                    "difference_ci_high": None, "resolved": None}
        out[gap] = {**row, "final_layer": final["layer"], "layer_count": len(records)}
    return out


def _row(encoder_id: str, gap: float, choice: dict, final_row: dict, chosen: Outcome,
         chosen_sim: Outcome, score: str) -> dict:
    out = {"encoder": encoder_id, "gap": gap, "score": score,
           "layer_final": choice["final_layer"], "layer_chosen": choice["best_layer"],
           "layer_chosen_index": choice["best_index"],
           "layer_chosen_depth": choice["best_depth"], "layer_count": choice["layer_count"],
           "changed": not choice["best_is_final"],
           "score_final": choice["final_estimate"], "score_chosen": choice["best_estimate"],
           "score_difference": choice["difference"],
           "score_difference_ci_low": choice["difference_ci_low"],
           "score_difference_ci_high": choice["difference_ci_high"],
           "score_resolved": choice["resolved"]}
    for key in ("success_real", "progress_real"):
        for end in ("", "_ci_low", "_ci_high"):
            out[f"{key}_final{end}"] = final_row[f"{key}{end}"]
    out.update(outcome_columns(chosen, "real_chosen"))
    out.update(outcome_columns(chosen_sim, "sim_chosen"))
    return out


def _effects(rows: list, finals: list, chosens: list, gaps: Sequence[float], *,
             n_boot: int, seed: int) -> list:
    """The paired effect rows: per outcome, encoder set (all / changed) and gap (and all)."""
    out = []
    encoders = list(dict.fromkeys(r["encoder"] for r in rows))
    for outcome, field in _OUTCOME_FIELDS.items():
        for which in ("all", "changed"):
            for gap in [*gaps, "all"]:
                final_arm, chosen_arm, names = [], [], []
                for encoder in encoders:
                    idx = [i for i, r in enumerate(rows) if r["encoder"] == encoder
                           and (gap == "all" or r["gap"] == gap)
                           and (which == "all" or r["changed"])]
                    if not idx:
                        continue
                    final_arm.append([v for i in idx for v in finals[i][field]])
                    chosen_arm.append([v for i in idx for v in chosens[i][field]])
                    names.append(encoder)
                effect = paired_effect(final_arm, chosen_arm, n_boot=n_boot, seed=seed)
                out.append({"outcome": outcome, "gap": gap, "encoders": which,
                            "encoder_ids": names, **effect})
    return out


def layer_validation(spec, encoder_ids: Sequence[str], framesets: dict, results: list,
                     outcomes: list, *, params: RolloutParams, score_params, score: str,
                     cache, device=None, n_boot: int = 2000,
                     progress: Optional[ProgressCallback] = None, settings=None) -> dict:
    """The ``layers`` section of a validation report (see the module docstring).

    Parameters
    ----------
    spec : str
        The world's dataset spec (its task is deployed in).
    encoder_ids : sequence of str
    framesets : dict
        ``{gap: FrameSet}`` the scores were computed on (the choice is made on them).
    results, outcomes : list
        The report's rows and per-rollout outcomes of the final layers (row ``i`` of both: one
        encoder at one gap).
    params, score_params, cache, device, n_boot, progress, settings
        As for :func:`s2r.closedloop.validation.validate`.
    score : str
        The score that picks each layer (a ranked catalogue score).

    Returns
    -------
    dict
        ``choice`` ("best"), ``score``, ``chosen_on``, ``rows`` (per image encoder and gap),
        ``outcomes`` (the chosen layers' per-rollout success and progress, row by row) and
        ``effects`` (:func:`s2r.metrics.layers.paired_effect` rows with ``outcome``, ``gap``,
        ``encoders`` = "all" or "changed" and ``encoder_ids``).
    """
    from s2r.encoders import get_spec

    gaps = list(framesets)
    rows, finals, chosens, chosen_outcomes = [], [], [], []
    images = [e for e in encoder_ids if get_spec(e, settings=settings).has_image_model]
    for n, encoder_id in enumerate(images):
        report(progress, n, len(images), f"{encoder_id}: every layer scored at each gap")
        choice = choose_layers(framesets, encoder_id, score=score, score_params=score_params,
                               cache=cache, device=device, settings=settings)
        by_layer: dict = {}
        for gap in gaps:
            by_layer.setdefault(choice[gap]["best_layer"], []).append(gap)
        runs = {}
        for layer, layer_gaps in by_layer.items():
            report(progress, n, len(images), f"{encoder_id}: rollouts at layer {layer}")
            runs[layer] = encoder_rollouts(encoder_id, layer_gaps, spec=spec, params=params,
                                           cache=cache, device=device, settings=settings,
                                           layer=layer)
        for gap in gaps:
            i = next(k for k, r in enumerate(results)
                     if r["encoder"] == encoder_id and float(r["gap"]) == float(gap))
            run = runs[choice[gap]["best_layer"]]
            chosen = run["real"][float(gap)]
            rows.append(_row(encoder_id, float(gap), choice[gap], results[i], chosen,
                             run["sim"], score))
            finals.append(outcomes[i])
            done = chosen.per_rollout()
            chosens.append(done)
            chosen_outcomes.append({"encoder": encoder_id, "gap": float(gap),
                                    "layer": choice[gap]["best_layer"], **done})
    return {"choice": "best", "score": score,
            "chosen_on": "every layer scored on the world's sim and real frames at each gap; "
                         "no rollout is looked at",
            "rows": rows, "outcomes": chosen_outcomes,
            "effects": _effects(rows, finals, chosens, [float(g) for g in gaps],
                                n_boot=n_boot, seed=params.seed)}

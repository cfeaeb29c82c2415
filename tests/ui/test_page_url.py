"""A page's own options in its URL (issue 27 item 5): a link or a reload reproduces them, a bad
value is warned about and replaced by the default, a change is written back to the URL."""

from __future__ import annotations

from s2r.evidence import default_score, shipped_evidence
from tests.ui.apptest import no_exception, open_app, use_env
from ui import state as S
from ui import pages


def _scores(computed, monkeypatch, query):
    use_env(monkeypatch, computed[0])
    at = open_app(pages.SCORES.path, query)
    at.run()
    no_exception(at)
    return at


def test_scores_link_reproduces_its_y_axis_intervals_and_labels(computed, monkeypatch):
    at = _scores(computed, monkeypatch, {"y": "transfer_score", "intervals": "0",
                                         "labels": "0"})
    assert at.radio(key=S.SCORES_Y).value == "transfer_score"
    assert at.checkbox(key=S.SCORES_ERRORBARS).value is False
    assert at.checkbox(key=S.SCORES_LABELS).value is False
    assert not at.warning or not any("link" in w.value for w in at.warning)
    # a change goes back into the URL: a reload of that URL opens the same view
    at.radio(key=S.SCORES_Y).set_value("action_score_heldout_skill").run()
    no_exception(at)
    query = {k: at.query_params[k] for k in ("y", "intervals", "labels")}
    assert query == {"y": "action_score_heldout_skill", "intervals": "0", "labels": "0"}
    again = _scores(computed, monkeypatch, query)
    assert again.radio(key=S.SCORES_Y).value == "action_score_heldout_skill"
    assert again.checkbox(key=S.SCORES_ERRORBARS).value is False


def test_scores_bad_link_values_are_warned_and_replaced(computed, monkeypatch):
    at = _scores(computed, monkeypatch, {"y": "nope", "intervals": "maybe"})
    warnings = [w.value for w in at.warning]
    assert any("y='nope' is not one of transfer_score_skill" in w for w in warnings), warnings
    assert any("intervals='maybe' is not one of 1, 0" in w for w in warnings), warnings
    assert at.radio(key=S.SCORES_Y).value == default_score("y", shipped_evidence(),
                                                           world="demo")   # the default
    assert at.checkbox(key=S.SCORES_ERRORBARS).value is True


def _page(computed, monkeypatch, page, query):
    use_env(monkeypatch, computed[0])
    at = open_app(page, query)
    at.run()
    no_exception(at)
    return at


def test_saliency_projection_and_validation_links_reproduce_their_options(computed,
                                                                         monkeypatch):

    at = _page(computed, monkeypatch, pages.SALIENCY.path,
               {"method": "ig", "target": "domain"})
    assert at.selectbox(key=S.SALIENCY_METHOD).value == "ig"
    assert at.selectbox(key=S.SALIENCY_TARGET).value == "domain"
    assert at.query_params["target"] == "domain"
    at = _page(computed, monkeypatch, pages.PROJECTION.path,
               {"mode": "place-real", "perplexity": "10"})
    assert at.radio(key=S.PROJECTION_MODE).value == "place-real"
    assert at.select_slider(key=S.PROJECTION_PERPLEXITY).value == 10
    at = _page(computed, monkeypatch, pages.PROJECTION.path, {"perplexity": "7"})
    assert any("perplexity='7' is not one of 5, 10, 20, 30, 50" in w.value for w in at.warning)
    assert at.select_slider(key=S.PROJECTION_PERPLEXITY).value == 30
    at = _page(computed, monkeypatch, pages.VALIDATION.path, {"policy": "ridge"})
    assert at.radio(key=S.VALIDATION_POLICY).value == "ridge"
    assert at.query_params["policy"] == "ridge"


def test_compare_link_reproduces_encoder_b(computed, monkeypatch):
    at = _page(computed, monkeypatch, pages.COMPARE.path,
               {"inspect": "pixels", "b": "resnet18@random"})
    assert at.selectbox(key=S.COMPARE_ENCODER_A).value == "pixels"
    assert at.selectbox(key=S.COMPARE_ENCODER_B).value == "resnet18@random"
    assert at.query_params["b"] == "resnet18@random"


def test_list_options_projection_encoders_and_validation_settings(computed, monkeypatch):

    at = _page(computed, monkeypatch, pages.PROJECTION.path,
               {"show": "pixels,resnet18@random"})
    assert at.multiselect(key=S.PROJECTION_ENCODERS).value == ["pixels", "resnet18@random"]
    assert at.query_params["show"] == "pixels,resnet18@random"
    at = _page(computed, monkeypatch, pages.PROJECTION.path, {"show": "pixels,nope"})
    assert any("show='pixels,nope' is not made of" in w.value for w in at.warning)
    at = _page(computed, monkeypatch, pages.VALIDATION.path,
               {"ids": "state,pixels,efficientnet-lite0", "gaps": "0,1", "rollouts": "10",
                "demos": "20", "policy": "mlp"})
    assert at.multiselect(key=S.VALIDATION_ENCODERS).value == ["state", "pixels",
                                                              "efficientnet-lite0"]
    assert at.multiselect(key=S.VALIDATION_GAPS).value == [0.0, 1.0]
    assert at.number_input(key=S.VALIDATION_ROLLOUTS).value == 10
    assert at.number_input(key=S.VALIDATION_DEMOS).value == 20
    assert at.radio(key=S.VALIDATION_POLICY).value == "mlp"
    assert at.query_params["gaps"] == "0,1" and at.query_params["rollouts"] == "10"
    at = _page(computed, monkeypatch, pages.VALIDATION.path, {"rollouts": "0"})
    assert any("rollouts='0' is not one of" in w.value for w in at.warning)
    assert at.number_input(key=S.VALIDATION_ROLLOUTS).value == 20


def test_saliency_and_compare_links_reproduce_the_frame_pair(computed, monkeypatch):
    at = _page(computed, monkeypatch, pages.SALIENCY.path, {"episode": "2", "step": "5"})
    assert at.selectbox(key="saliency.episode").value == 2
    assert at.slider(key="saliency.step").value == 5
    assert at.query_params["episode"] == "2" and at.query_params["step"] == "5"
    at = _page(computed, monkeypatch, pages.COMPARE.path,
               {"b": "resnet18@random", "episode": "1", "step": "6"})
    assert at.selectbox(key="compare.episode").value == 1
    assert at.slider(key="compare.step").value == 6
    assert at.query_params["episode"] == "1" and at.query_params["step"] == "6"
    at = _page(computed, monkeypatch, pages.COMPARE.path, {"episode": "99"})
    assert any("episode='99' is not one of" in w.value for w in at.warning)


# ----------------------------------------------------------------------------- issue 36 item 3
def test_an_int_range_says_only_what_python_writes_and_lists_nothing():
    from ui.page_url import IntRange, Option, _allowed, _text_of

    seeds = IntRange(0, 10_000)
    assert seeds["0"] == 0 and seeds["10000"] == 10_000 and "42" in seeds
    for hostile in ("-1", "10001", "007", "-0", "+3", "1e3", "3.0", " 3", "3 ", "",
                    "\u0663", "\uff13", "9" * 5000, "0x10", None, 3):
        assert hostile not in seeds, hostile
    assert len(seeds) == 10_001 and list(IntRange(2, 4)) == ["2", "3", "4"]
    assert _text_of(seeds, 42) == "42" and _text_of(seeds, 10_001) is None
    assert _text_of(seeds, True) is None and _text_of({"a": 1}, 1) == "a"
    assert _allowed(Option("seed", "k", seeds)) == "a whole number from 0 to 10000"


def _round_trip(computed, monkeypatch, page, query, params):
    """Open ``page`` from ``query``, then again from the URL the first session wrote: both
    show the same ``params``, and the second URL says them again."""
    at = _page(computed, monkeypatch, page, query)
    assert not [w.value for w in at.warning if "link" in w.value]
    assert {k: at.query_params[k] for k in params} == {k: query[k] for k in params}
    again = _page(computed, monkeypatch, page, {k: at.query_params[k] for k in at.query_params})
    assert {k: again.query_params[k] for k in params} == {k: query[k] for k in params}
    return at, again


def test_saliency_link_reproduces_the_action_dimension_and_the_random_sample(computed,
                                                                             monkeypatch):
    query = {"target": "action", "action_dim": "1", "frames": "random", "pairs": "2",
             "seed": "4242"}
    for at in _round_trip(computed, monkeypatch, pages.SALIENCY.path, query, query):
        assert at.selectbox(key=S.SALIENCY_ACTION_DIM).value == 1
        assert at.radio(key=S.SALIENCY_PICK_MODE).value == "Random sample"
        assert at.slider(key=S.SALIENCY_N_SAMPLES).value == 2
        assert at.number_input(key=S.SALIENCY_SAMPLE_SEED).value == 4242
        assert sum("Sim/real agreement" in m.value for m in at.markdown) == 2
    # a change is written back
    at.number_input(key=S.SALIENCY_SAMPLE_SEED).set_value(7).run()
    at.slider(key=S.SALIENCY_N_SAMPLES).set_value(3).run()
    no_exception(at)
    assert (at.query_params["seed"], at.query_params["pairs"]) == ("7", "3")


def test_saliency_bad_sample_options_are_warned_and_replaced(computed, monkeypatch):
    at = _page(computed, monkeypatch, pages.SALIENCY.path,
               {"target": "action", "action_dim": "99", "frames": "random", "pairs": "7",
                "seed": "9" * 5000})
    warnings = " ".join(w.value for w in at.warning)
    assert "action_dim='99' is not one of 0, 1" in warnings, warnings
    assert "pairs='7' is not one of 1, 2, 3, 4, 5, 6" in warnings
    assert "is not one of a whole number from 0 to 10000" in warnings
    assert len(warnings) < 2000                              # never the 5,000 digits
    assert at.selectbox(key=S.SALIENCY_ACTION_DIM).value == 0
    assert at.slider(key=S.SALIENCY_N_SAMPLES).value == 3
    assert at.number_input(key=S.SALIENCY_SAMPLE_SEED).value == 0
    for seed in ("-1", "1e3", "007"):
        at = _page(computed, monkeypatch, pages.SALIENCY.path,
                   {"frames": "random", "seed": seed})
        assert any(f"seed={seed!r} is not one of a whole number" in w.value
                   for w in at.warning), seed
        assert at.number_input(key=S.SALIENCY_SAMPLE_SEED).value == 0


def test_scores_link_reproduces_the_ranking_score(computed, monkeypatch):
    for at in _round_trip(computed, monkeypatch, pages.SCORES.path, {"rank": "dis"},
                          ["rank"]):
        assert at.selectbox(key=S.SCORES_RANK_METRIC).value == "dis"
    at.selectbox(key=S.SCORES_RANK_METRIC).set_value("paired_retrieval_mrr").run()
    assert at.query_params["rank"] == "paired_retrieval_mrr"
    bad = _page(computed, monkeypatch, pages.SCORES.path, {"rank": "transfer_score"})
    assert any("rank='transfer_score' is not one of sim2real_score" in w.value
               for w in bad.warning)
    assert bad.selectbox(key=S.SCORES_RANK_METRIC).value == default_score(
        "ranking", shipped_evidence(), world="demo")             # the evidence's default


def test_projection_link_reproduces_the_every_frame_toggle(computed, monkeypatch):
    from ui.loaders import projection

    monkeypatch.setattr(projection, "MAP_PER_DOMAIN", 20)   # TINY: 32 frames per domain
    for at in _round_trip(computed, monkeypatch, pages.PROJECTION.path,
                          {"all_frames": "1"}, ["all_frames"]):
        assert at.toggle(key=S.PROJECTION_ALL_FRAMES).value is True
    at.toggle(key=S.PROJECTION_ALL_FRAMES).set_value(False).run()
    no_exception(at)
    assert at.query_params["all_frames"] == "0"
    bad = _page(computed, monkeypatch, pages.PROJECTION.path, {"all_frames": "yes"})
    assert any("all_frames='yes' is not one of 1, 0" in w.value for w in bad.warning)
    assert bad.toggle(key=S.PROJECTION_ALL_FRAMES).value is False

"""Screenshots of every dashboard page on the demo, for the README (docs/screenshots/*.png).

Starts the app on a free port with its own cache folder, lets the home page compute the
encoder set, clicks a point of the score scatter, a point of the t-SNE map, and saves one PNG
per page. Needs Debian's chromium (``make browser-deps``).

    .venv/bin/python bench/take_screenshots.py            # the app's default demo and encoders
    .venv/bin/python bench/take_screenshots.py --quick    # a tiny demo, two encoders
    .venv/bin/python bench/take_screenshots.py --only-projection  # projection*.png only

The Validation page needs ``s2r validate`` run first (minutes per encoder); give its cache
folder and dataset spec (and its ``--encoders``, if not the default set) to add
``validation.png`` (``--only-validation``: just that)::

    .venv/bin/python bench/take_screenshots.py --validation-cache VAL/cache \
        --validation-demo demo:episodes=8,steps=16,height=96,width=128 \
        --validation-encoders state,pixels,efficientnet-lite0

The Layers page (``layers_profile.png``, ``layers_gradcam.png``; its encoders' every layer is
scored first)::

    .venv/bin/python bench/take_screenshots.py --only-layers \
        --layers efficientnet-lite0,resnet18@random,pixels,state

A Meta-World run's page and the home page on Meta-World (``docs/screenshots``' files
``validation_metaworld.png`` and ``home_metaworld.png``)::

    .venv/bin/python bench/take_screenshots.py --only-validation \
        --validation-cache VAL/cache --validation-name validation_metaworld \
        --validation-demo metaworld:task=button-press-topdown-v3,episodes=4,steps=40,seed=3 \
        --validation-query 'ids=state,pixels,efficientnet-lite0&gaps=0,1&rollouts=5&demos=20' \
        --home-spec metaworld:task=button-press-topdown-v3,episodes=6,steps=40
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.browser import (
    MAP_AREA, WEBGL_ARGS, browser_page, find_chart_point, find_map_point, running_app,
    wait_idle)

OUT = REPO / "docs" / "screenshots"
WIDTH = 1400


def shoot(page, name: str, out: Path) -> Path:
    """Resize the viewport to the page's content height and save ``out/name.png``."""
    height = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]') ||"
        " document.body; return m.scrollHeight; }")
    page.set_viewport_size({"width": WIDTH, "height": int(min(max(height, 800), 6000))})
    time.sleep(1.0)
    path = out / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    print(f"wrote {path} ({height} px tall)", flush=True)
    return path


def open_page(page, label: str, ready_text: str) -> None:
    """Open a page through the sidebar (keeps the session and its selections) and wait
    until ``ready_text`` is shown and the run has finished."""
    page.locator('[data-testid="stSidebarNav"]').get_by_text(label, exact=True).click()
    page.get_by_text(ready_text).first.wait_for(timeout=300_000)
    wait_idle(page)


def shoot_live_projection(page, url: str, out: Path) -> Path:
    """``projection_live.png``: the Projection page while t-SNE optimises a map not yet
    cached (perplexity 50: the map above used the default 30), shot at the first snapshot
    after the early-exaggeration phase ended (its caption says the iteration and the KL)."""
    page.set_viewport_size({"width": WIDTH, "height": 1100})
    page.goto(url.rstrip("/") + "/projection?perplexity=50")
    # The page's pickers drawn (a shot at the first snapshot caught them as grey skeletons),
    # and a snapshot after the early exaggeration (before it, the clusters are tight blobs).
    page.get_by_text("Encoders (up to 3)").first.wait_for(timeout=300_000)
    page.get_by_text("stops early once the KL").first.wait_for(timeout=300_000)
    page.mouse.move(5, 5)
    path = out / "projection_live.png"
    page.screenshot(path=str(path))
    page.get_by_text("Mixing number").first.wait_for(timeout=300_000)  # it then finishes
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    print(f"wrote {path}", flush=True)
    return path


def shoot_validation(cache_dir: str, spec: str, out: Path, query: str = "",
                     name: str = "validation") -> None:
    """``NAME.png``: the Validation page on a cache ``python -m s2r validate`` filled (the
    page's settings: its defaults, or those ``query`` names, e.g.
    ``ids=state,pixels&gaps=0,1&rollouts=5``), with the saliency of a rollout step of the
    encoder the viewer opens on. ``spec`` is the dataset the run used (``demo:...`` or
    ``metaworld:...``): the page opens on its world."""
    env = {"S2R_CACHE_DIR": str(cache_dir), "S2R_DEMO_SPEC": spec,
           "S2R_DEFAULT_ENCODERS": "pixels", "S2R_AUTOCOMPUTE": "0"}
    with running_app(env) as url, browser_page(width=WIDTH, height=1000) as page:
        page.goto(url.rstrip("/") + "/validation" + (f"?{query}" if query else ""))
        page.get_by_text("Which score predicts real").first.wait_for(timeout=600_000)
        wait_idle(page)
        page.get_by_text("Saliency of this frame").first.click()
        page.get_by_text("Sim/real agreement").first.wait_for(timeout=300_000)
        wait_idle(page)
        page.mouse.move(5, 5)
        shoot(page, name, out)


def shoot_home(spec: str, encoders: str, out: Path, name: str) -> None:
    """``NAME.png``: the home page on ``spec`` (e.g. a ``metaworld:...`` dataset) with
    ``encoders`` scored on the first visit, in a cache folder of its own."""
    env = {"S2R_CACHE_DIR": tempfile.mkdtemp(prefix="s2r-shots-"), "S2R_DEMO_SPEC": spec,
           "S2R_DEFAULT_ENCODERS": encoders}
    with running_app(env) as url, browser_page(width=WIDTH, height=1000) as page:
        page.goto(url)
        page.get_by_text("Scores: DIS vs AS").wait_for(timeout=900_000)
        wait_idle(page)
        page.mouse.move(5, 5)
        shoot(page, name, out)


def shoot_layers(spec: str, encoders: str, out: Path, *, y: str = "action_score_heldout_skill",
                 click: str = "blocks.4") -> None:
    """``layers_profile.png`` and ``layers_gradcam.png``: the Layers page (score ``y`` against
    depth) after a click on layer ``click``, and its Grad-CAM at that layer. The encoders and
    every layer of them are scored in this process first (what the home page and the page's
    button compute), into a fresh cache folder."""
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.pipeline import score_encoder
    from s2r.pipeline.layers import score_encoders_layers

    cache_dir = tempfile.mkdtemp(prefix="s2r-layers-shots-")
    ids = encoders.split(",")
    frameset, cache = load_dataset(spec), Cache(cache_dir)
    for encoder_id in ids:
        score_encoder(frameset, encoder_id, cache=cache)
    score_encoders_layers(frameset, ids, "all", cache=cache)
    env = {"S2R_CACHE_DIR": cache_dir, "S2R_DEMO_SPEC": spec, "S2R_DEFAULT_ENCODERS": encoders,
           "S2R_AUTOCOMPUTE": "0"}
    with running_app(env) as url, browser_page(width=WIDTH, height=1000) as page:
        page.goto(f"{url.rstrip('/')}/layers?y={y}")
        page.get_by_role("heading", name="Grad-CAM at").wait_for(timeout=300_000)
        wait_idle(page)
        chart = page.locator(".vega-embed").first
        x, y_px, tip = find_chart_point(page, chart, wanted=f"{click}\n")
        page.mouse.click(x, y_px)
        heading = page.get_by_role("heading", name=f"Grad-CAM at {click} of")
        heading.wait_for(timeout=300_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
            ".filter(i => i.complete && i.naturalWidth > 0).length >= 4", timeout=120_000)
        wait_idle(page)
        page.mouse.move(5, 5)
        time.sleep(1.0)
        page.screenshot(path=str(out / "layers_profile.png"))
        heading.evaluate("e => e.scrollIntoView({block: 'center'})")
        time.sleep(1.0)
        page.screenshot(path=str(out / "layers_gradcam.png"))
        print(f"wrote {out / 'layers_profile.png'} and {out / 'layers_gradcam.png'} "
              f"(clicked: {tip.splitlines()[0]} @ {click}; URL {page.url})", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny demo, two encoders")
    parser.add_argument("--demo", default=None, help="dataset spec (default: the app's)")
    parser.add_argument("--encoders", default=None,
                        help="comma-separated encoder ids (default: the app's default set)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--validation-cache", default=None, metavar="DIR",
                        help="cache folder of a 'python -m s2r validate' run: also shoot the "
                             "Validation page")
    parser.add_argument("--validation-demo", default=None, metavar="SPEC",
                        help="the demo spec that run used")
    parser.add_argument("--validation-encoders", default=None, metavar="A,B,...",
                        help="the --encoders of that run (default: the page's default set)")
    parser.add_argument("--validation-query", default="", metavar="QUERY",
                        help="the Validation page's settings as its URL says them (e.g. "
                             "ids=state,pixels,efficientnet-lite0&gaps=0,1&rollouts=5&demos=20)")
    parser.add_argument("--validation-name", default="validation", metavar="NAME",
                        help="the Validation page's file name (NAME.png)")
    parser.add_argument("--only-validation", action="store_true")
    parser.add_argument("--layers", default=None, metavar="A,B,...",
                        help="also shoot the Layers page with these encoders (every layer "
                             "scored first), clicking a layer of EfficientNet-Lite0")
    parser.add_argument("--only-layers", action="store_true")
    parser.add_argument("--home-spec", default=None, metavar="SPEC",
                        help="also shoot the home page on this dataset (e.g. metaworld:...) as "
                             "home_metaworld.png (--home-name), scoring --encoders; with "
                             "--only-validation: only these two")
    parser.add_argument("--home-name", default="home_metaworld", metavar="NAME")
    parser.add_argument("--only-projection", action="store_true",
                        help="after the home page computes, shoot only projection.png and "
                             "projection_live.png")
    args = parser.parse_args(argv)
    if args.layers:
        args.out.mkdir(parents=True, exist_ok=True)
        shoot_layers(args.demo or "demo", args.layers, args.out)
        if args.only_layers:
            return 0
    if args.validation_cache:
        query = "&".join(q for q in (args.validation_encoders and f"ids={args.validation_encoders}",
                                     args.validation_query) if q)
        shoot_validation(args.validation_cache, args.validation_demo or "demo", args.out,
                         query, args.validation_name)
    if args.home_spec:
        shoot_home(args.home_spec, args.encoders or "state,pixels,efficientnet-lite0",
                   args.out, args.home_name)
    if args.only_validation:
        return 0
    if args.quick:
        args.demo = args.demo or "demo:episodes=4,steps=8,height=96,width=128"
        args.encoders = args.encoders or "resnet18@random,pixels"
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"S2R_CACHE_DIR": tempfile.mkdtemp(prefix="s2r-shots-")}
    if args.demo:
        env["S2R_DEMO_SPEC"] = args.demo
    if args.encoders:
        env["S2R_DEFAULT_ENCODERS"] = args.encoders
    start = time.perf_counter()
    with running_app(env) as url, \
            browser_page(width=WIDTH, height=1000, extra_args=WEBGL_ARGS) as page:
        page.goto(url)
        page.get_by_text("Scores: DIS vs AS").wait_for(timeout=900_000)
        wait_idle(page)
        print(f"home computed in {time.perf_counter() - start:.0f} s", flush=True)
        if not args.only_projection:
            shoot(page, "home", args.out)
        pick_on_scores(page, args)  # the Projection page opens on the encoder picked there
        if not args.only_projection:
            shoot(page, "scores", args.out)
        shoot_projection(page, args.out)
        if not args.only_projection:
            open_page(page, "Saliency", "Sim/real agreement")
            shoot(page, "saliency", args.out)
            open_page(page, "Compare", "Encoder agreement")
            shoot(page, "compare", args.out)
        shoot_live_projection(page, url, args.out)  # a new session: last
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


def pick_on_scores(page, args) -> None:
    """The Scores page with the second encoder's point clicked (``scores.png``)."""
    open_page(page, "Scores", "sim/real agreement")
    chart = page.locator(".vega-embed").first
    ids = (args.encoders or ",efficientnet-lite0").split(",")
    x, y, _ = find_chart_point(page, chart, wanted=ids[1], timeout_s=300)  # a grid scan
    page.mouse.click(x, y)
    page.get_by_role("heading", name=f"({ids[1]})").wait_for(timeout=300_000)
    wait_idle(page)
    page.mouse.move(5, 5)


def shoot_projection(page, out: Path) -> None:
    """``projection.png``: the Projection page with a point of the map clicked."""
    open_page(page, "Projection", "Mixing number")
    area = page.locator(MAP_AREA).first
    area.wait_for(timeout=300_000)
    x, y, _ = find_map_point(page, area)
    page.mouse.click(x, y)
    page.get_by_text("Frame index").wait_for(timeout=120_000)
    wait_idle(page)
    page.mouse.move(5, 5)
    shoot(page, "projection", out)


if __name__ == "__main__":
    raise SystemExit(main())

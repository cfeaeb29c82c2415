"""Dashboard speed: cold start to the scores table, and warm interaction latency.

Cold start
    A fresh cache folder, ``streamlit run app.py`` in a subprocess, headless Chromium opens
    it: seconds until the home page shows the scores table of the default encoder set (the
    first visit computes it). Goal: < 120 s on 2 CPU cores. Without Chromium the same is
    measured with Streamlit's AppTest in a subprocess (no browser, no server).

Warm interactions (AppTest, in process, on the cache the cold start filled)
    Each interaction is timed twice in the same process: the first time (nothing of it in
    any cache: saliency maps and t-SNE are computed; the baseline) and again after a detour
    (everything cached). Goal for the warm time: < 2 s.

    .venv/bin/python bench/bench_app.py            # the app's default demo and encoders
    .venv/bin/python bench/bench_app.py --quick    # tiny demo, two encoders (a minute)
    .venv/bin/python bench/bench_app.py --runtimes torch,auto --repeats 2   # cold start only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COLD_GOAL_S = 120.0
WARM_GOAL_S = 2.0
QUICK_DEMO = "demo:episodes=4,steps=8,height=96,width=128"
QUICK_ENCODERS = "resnet18@random,pixels"


def cold_start_browser(env: dict) -> float:
    """Seconds from ``streamlit run`` to the scores table on the home page (Chromium)."""
    from tests.helpers.browser import browser_page, running_app

    start = time.perf_counter()
    with running_app(env) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Scores: DIS vs AS").wait_for(timeout=1_800_000)
        page.locator('[data-testid="stDataFrame"]').nth(1).wait_for(timeout=60_000)
        return time.perf_counter() - start


_APPTEST_COLD = """
import sys, time
start = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=1800)
at.run()
assert not at.exception, [e.message for e in at.exception]
assert any("dis" in d.value.columns for d in at.dataframe), "no scores table"
print(time.perf_counter() - start)
"""


def cold_start_apptest(env: dict) -> float:
    """Seconds for a fresh Python process to run the home page's first visit (AppTest)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _APPTEST_COLD, str(REPO / "app.py")],
                         env={**os.environ, **env}, cwd=REPO, capture_output=True, text=True,
                         check=True)
    float(out.stdout.strip().splitlines()[-1])
    return time.perf_counter() - start


def timed_run(at) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError([e.message for e in at.exception])
    return elapsed


def warm_interactions(encoders: list[str]) -> list[dict]:
    """Time each interaction the first time (baseline) and again with everything cached."""
    from streamlit.testing.v1 import AppTest

    from ui import pages
    from ui import state as S

    a, b = encoders[0], encoders[1]
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=1800)
    at.run()  # home: the scores are on disk already (cold start), read back
    rows = []

    def click(encoder: str) -> float:
        at.session_state[S.SCORES_CHART] = {"selection": {"pick": [{"encoder": encoder}]}}
        return timed_run(at)

    at.switch_page(pages.SCORES.path)
    first_open = timed_run(at)  # inspector on `a`: its saliency gallery and t-SNE computed
    rows.append({"interaction": f"open Scores (inspects {a})", "first_s": first_open,
                 "warm_s": timed_run(at)})
    first = click(b)
    click(a)
    rows.append({"interaction": f"click the {b} point on Scores", "first_s": first,
                 "warm_s": click(b)})

    at.switch_page(pages.SALIENCY.path)
    timed_run(at)
    slider = at.slider(key="saliency.step")
    lo, hi = slider.min, slider.max
    slider.set_value(hi)
    first = timed_run(at)
    at.slider(key="saliency.step").set_value(lo)
    timed_run(at)
    at.slider(key="saliency.step").set_value(hi)
    rows.append({"interaction": "change frame on Saliency", "first_s": first,
                 "warm_s": timed_run(at)})

    at.switch_page(pages.COMPARE.path)
    timed_run(at)
    at.slider(key="compare.step").set_value(lo + 1)
    first = timed_run(at)
    at.slider(key="compare.step").set_value(hi)
    timed_run(at)
    at.slider(key="compare.step").set_value(lo + 1)
    rows.append({"interaction": "change frame on Compare", "first_s": first,
                 "warm_s": timed_run(at)})

    at.switch_page(pages.PROJECTION.path)
    first = timed_run(at)
    at.session_state[f"projection.chart.{a}"] = {"selection": {"frame": [{"index": 1}]}}
    rows.append({"interaction": "open Projection, then click a t-SNE point", "first_s": first,
                 "warm_s": timed_run(at)})
    return rows


def cold_start_by_runtime(args) -> int:
    """The cold start per runtime, arms alternating in this process, each from an empty cache
    folder (ONNX Runtime's pays its graphs' export)."""
    import statistics

    from tests.helpers.browser import chromium_available

    runtimes = args.runtimes.split(",")
    use_browser = chromium_available() and not args.no_browser
    base = {"S2R_DEMO_SPEC": QUICK_DEMO, "S2R_DEFAULT_ENCODERS": QUICK_ENCODERS} if args.quick \
        else {}
    times: dict = {rt: [] for rt in runtimes}
    for _ in range(args.repeats):
        for rt in runtimes:
            env = {**base, "S2R_CACHE_DIR": tempfile.mkdtemp(prefix="s2r-bench-app-"),
                   "S2R_RUNTIME": rt}
            load = os.getloadavg()[0]
            cold = cold_start_browser(env) if use_browser else cold_start_apptest(env)
            times[rt].append(cold)
            print(f"cold start, S2R_RUNTIME={rt}: {cold:6.1f} s (load {load:.2f} at the "
                  "start)", flush=True)
    medians = {rt: statistics.median(v) for rt, v in times.items()}
    first = runtimes[0]
    for rt in runtimes:
        print(f"S2R_RUNTIME={rt:6s} median {medians[rt]:6.1f} s   {first} / {rt}: "
              f"{medians[first] / medians[rt]:.2f}x   goal < {COLD_GOAL_S:.0f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"tiny demo ({QUICK_DEMO}) and {QUICK_ENCODERS}")
    parser.add_argument("--no-browser", action="store_true",
                        help="measure the cold start with AppTest instead of Chromium")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--runtimes", metavar="A,B",
                        help="only the cold start, once per runtime (S2R_RUNTIME: torch, "
                             "auto), alternating --repeats times, each from an empty cache "
                             "(graphs exported included); prints each median and the ratio")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    if args.runtimes:
        return cold_start_by_runtime(args)

    from tests.helpers.browser import chromium_available
    from ui import state as S

    cache = tempfile.mkdtemp(prefix="s2r-bench-app-")
    env = {"S2R_CACHE_DIR": cache}
    if args.quick:
        env.update(S2R_DEMO_SPEC=QUICK_DEMO, S2R_DEFAULT_ENCODERS=QUICK_ENCODERS)
    os.environ.update(env)
    spec, encoders = S.default_spec(), S.default_encoders()
    print(f"dataset {spec}; encoders {', '.join(encoders)}; {os.cpu_count()} CPUs; "
          f"cache {cache}", flush=True)

    use_browser = chromium_available() and not args.no_browser
    how = "streamlit + Chromium" if use_browser else "AppTest subprocess"
    cold = cold_start_browser(env) if use_browser else cold_start_apptest(env)
    print(f"\ncold start ({how}), first visit to scores table: {cold:6.1f} s   "
          f"goal < {COLD_GOAL_S:.0f} s   ratio {cold / COLD_GOAL_S:.2f}", flush=True)

    rows = warm_interactions(encoders)
    print(f"\n{'interaction':48s} {'first':>8s} {'warm':>8s} {'first/warm':>10s} "
          f"{'warm/goal':>10s}")
    for r in rows:
        print(f"{r['interaction']:48s} {r['first_s']:7.2f}s {r['warm_s']:7.2f}s "
              f"{r['first_s'] / r['warm_s']:9.1f}x {r['warm_s'] / WARM_GOAL_S:10.2f}")
    worst = max(r["warm_s"] for r in rows)
    print(f"\nslowest warm interaction {worst:.2f} s (goal < {WARM_GOAL_S:.0f} s): "
          f"{'OK' if worst < WARM_GOAL_S else 'SLOWER THAN GOAL'}; cold start "
          f"{'OK' if cold < COLD_GOAL_S else 'SLOWER THAN GOAL'}")
    if args.json:
        args.json.write_text(json.dumps({"dataset": spec, "encoders": encoders,
                                         "cold_start_s": cold, "cold_how": how,
                                         "interactions": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

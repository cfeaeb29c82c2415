"""``python -m s2r figure``: the dashboard's charts as paper figures (SVG, PDF or PNG).

::

    python -m s2r figure scores demo --encoders pixels,state --out fig5.pdf
    python -m s2r figure tsne demo --encoder efficientnet-lite0 --out tsne.svg
    python -m s2r figure saliency demo --encoder efficientnet-lite0 --frames 3,40 --out sal.pdf
    python -m s2r figure compare demo --encoders efficientnet-lite0,pixels --frame 3 --out c.pdf
    python -m s2r figure validation report.json --score dis --out validation.png
    python -m s2r figure layers demo --encoders efficientnet-lite0 --out layers.svg
    python -m s2r figure evidence evidence.json --out forest.pdf

Charts are the dashboard's own: the pages and this command call the same builders of
:mod:`s2r.figures` (``scores``, ``projection``, ``validation``, ``real_results``) on the same
cached records, restyled here for one column of a two-column paper (:func:`s2r.figures.
chart_bytes`); saliency grids are matplotlib figures of the page's overlays with a colour bar.
The format is the suffix of ``--out``. Nothing here reads the dashboard's files, so it works
from an installed ``s2r`` alone.
"""

from __future__ import annotations

import argparse

import numpy as np

from s2r.cli import (add_dataset_args, add_force_arg, add_runtime_args, announce_first_use,
                     atomic_output, cache_from_args, dataset_from_args, integer_arg, number_arg,
                     output_file, settings_from_args, train_announced)
from s2r.errors import S2RError
from s2r.metrics import catalogue

#: How a help text names the default of a score option.
_BY_EVIDENCE = "default: the score with the strongest record in the evidence"

KINDS = ("scores", "tsne", "saliency", "compare", "validation", "layers", "evidence")


def register(subparsers) -> None:
    from s2r.figures import FORMATS

    p = subparsers.add_parser(
        "figure", help="write a chart of the dashboard as a paper figure (.svg, .pdf, .png)",
        description="Draw one of the dashboard's charts from the same (cached) results and "
                    "write it as a vector SVG/PDF or a 300 dpi PNG sized for one column of a "
                    "two-column paper (8 pt text).")
    kinds = p.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True
    out_help = f"figure file ({', '.join(FORMATS)}; the suffix picks the format)"

    def kind(name: str, help: str, *, dataset: bool = True, runtime: bool = True):
        k = kinds.add_parser(name, help=help, description=help,
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        if dataset:
            add_dataset_args(k)
        k.add_argument("--out", required=True, metavar="FILE", help=out_help)
        add_force_arg(k)
        k.add_argument("--wide", action="store_true",
                       help="a full page width (7.16 in) instead of one column (3.5 in)")
        if runtime:
            add_runtime_args(k, no_cache=False)
        k.set_defaults(func=run)
        return k

    from s2r.options import METHODS, TARGET_KINDS

    k = kind("scores", "the Scores page's scatter (the paper's Fig. 5): DIS vs an action score")
    k.add_argument("--encoders", required=True, metavar="A,B,...",
                   help="encoder ids or wildcards (scored first if not cached)")
    k.add_argument("--y", default=None, metavar="SCORE",
                   help="y axis: " + ", ".join(catalogue.keys("y")) + f" ({_BY_EVIDENCE} "
                        "among them)")
    k.add_argument("--no-intervals", action="store_true", help="leave out the 95%% intervals")
    k.add_argument("--no-labels", action="store_true", help="leave out the point labels")
    k = kind("tsne", "the t-SNE map of one encoder's sim and real embeddings")
    k.add_argument("--encoder", required=True, metavar="NAME", help="encoder id")
    k.add_argument("--mode", choices=("joint", "place-real"), default="joint",
                   help="joint: fit all frames; place-real: fit sim frames, place real ones")
    k.add_argument("--perplexity", type=number_arg, default=30.0, help="t-SNE perplexity")
    k = kind("saliency", "saliency overlays of sim frames and their paired real frames "
                         "(one row per pair) with a colour bar")
    k.add_argument("--encoder", required=True, metavar="NAME", help="encoder id")
    k.add_argument("--frames", default=None, metavar="IDS",
                   help="sim frame indices (default: 3 spread over the sim frames, as the "
                        "Scores page)")
    k.add_argument("--method", choices=METHODS, default=None,
                   help="default: gradcam where the encoder has a Grad-CAM layer, else ig")
    k.add_argument("--target", choices=TARGET_KINDS, default="embedding",
                   help="what the maps explain")
    k.add_argument("--action-dim", default="0", metavar="J",
                   help="action dimension for --target action")
    k.add_argument("--with-frames", action="store_true", help="raw frames next to overlays")
    k = kind("compare", "the Compare page: two encoders on one sim/real frame pair")
    k.add_argument("--encoders", required=True, metavar="A,B", help="two encoder ids")
    k.add_argument("--frame", type=integer_arg, default=None, metavar="I",
                   help="sim frame index (default: the middle sim frame)")
    k = kind("layers", "the Layers page's depth profile: a score of every layer of each "
                       "encoder against its relative depth")
    k.add_argument("--encoders", required=True, metavar="A,B,...",
                   help="encoder ids or wildcards (their layers scored first if not cached)")
    k.add_argument("--y", default=None, metavar="SCORE",
                   help="the score drawn: " + ", ".join(catalogue.ranked_keys())
                        + f" ({_BY_EVIDENCE})")
    k.add_argument("--layers", default="all", metavar="all|NAME,...",
                   help="the layers drawn (default all)")
    k.add_argument("--no-intervals", action="store_true", help="leave out the interval bands")
    k = kind("validation", "the Validation page's scatter: real success vs a score",
             dataset=False, runtime=False)
    k.add_argument("report", metavar="REPORT.json",
                   help="a report written by 'python -m s2r validate' (at most 32 MiB and "
                        "20,000 rows; checked field by field before drawing)")
    k.add_argument("--score", default=None, metavar="SCORE",
                   help=f"the score on the x axis ({_BY_EVIDENCE})")
    k = kind("evidence", "the forest plot of the evidence: each score's Spearman with real "
                         "success per task-gap with its interval, and its combined estimate",
             dataset=False, runtime=False)
    k.add_argument("evidence", metavar="EVIDENCE.json",
                   help="an evidence file written by 'python -m s2r evidence' (checked field "
                        "by field before drawing)")
    k.add_argument("--outcome", choices=("success", "progress"), default="success",
                   help="the real outcome the scores are correlated with")


def run(args) -> int:
    from s2r.figures import figure_format

    out = output_file(args.out, (".svg", ".pdf", ".png"), args=args, kind="figure",
                      reads=_inputs(args))
    fmt = figure_format(out)
    _default_score(args)
    data = _DRAW[args.kind](args, fmt)
    with atomic_output(out, args, "figure") as tmp:
        tmp.write_bytes(data)
    print(f"wrote {out} ({args.kind}, {fmt}, {len(data) / 1024:.0f} KiB)")
    return 0


#: What a figure's score option defaults to: ``kind -> (option, default_score view)``.
_DEFAULT_VIEWS = {"scores": ("y", "y"), "layers": ("y", "ranking"),
                  "validation": ("score", "validation")}


def _default_score(args) -> None:
    """Fill in a score option left out: :func:`s2r.evidence.default_score` of the evidence in
    effect (``S2R_EVIDENCE``, else the shipped evidence)."""
    name, view = _DEFAULT_VIEWS.get(args.kind, (None, None))
    if name is not None and getattr(args, name) is None:
        from s2r.evidence import default_score, evidence_in_effect

        setattr(args, name, default_score(view, evidence_in_effect(settings_from_args(args))))


def _inputs(args) -> list:
    """(what, path) of the report a figure reads (the datasets are :func:`run_reads`')."""
    if getattr(args, "evidence", None):
        return [("the evidence", args.evidence)]
    return [("the report", args.report)] if getattr(args, "report", None) else []


def _size(args) -> dict:
    from s2r.figures.render import COLUMN_WIDTH, PAGE_WIDTH

    return {"width": (PAGE_WIDTH if args.wide else COLUMN_WIDTH) - 60}


def _ids(text: str, args) -> list[str]:
    from s2r.commands.score import expand_encoder_ids

    return expand_encoder_ids(text, settings_from_args(args))


def _scores(args, fmt: str) -> bytes:
    from s2r.figures import chart_bytes
    from s2r.figures import scores as charts
    from s2r.pipeline import score_encoders
    from s2r.progress import tqdm_progress

    if args.y not in catalogue.keys("y"):
        raise S2RError(f"--y must be one of {', '.join(catalogue.keys('y'))}, got {args.y!r}")
    ids = _ids(args.encoders, args)
    cache = cache_from_args(args)
    first_use = announce_first_use(ids, args)
    frameset = dataset_from_args(args).require_domains()
    train_announced(first_use, args)
    with tqdm_progress("score") as progress:
        records = score_encoders(frameset, ids, cache=cache, device=args.device,
                                 progress=progress, settings=settings_from_args(args))
    frame = charts.scores_frame(records)
    _say_ranges(["dis", args.y], charts.scatter_frame(frame, args.y)[0], "label")
    chart = charts.score_scatter(frame, y=args.y, error_bars=not args.no_intervals,
                                 labels=not args.no_labels,
                                 records=_say_records(["dis", args.y], frameset, args))
    return chart_bytes(chart, fmt, **_size(args))


def _say_records(keys, frameset, args) -> dict:
    """Print each drawn score's record against closed-loop success in the evidence in effect
    (for the figure's caption) and return them (:class:`s2r.evidence.Record` by key)."""
    from s2r.evidence import evidence_in_effect, evidence_label, score_record
    from s2r.pipeline.pick import world_of

    settings = settings_from_args(args)
    evidence = evidence_in_effect(settings)
    records = {k: score_record(evidence, k, world=world_of(frameset)) for k in keys}
    print(f"record against closed-loop success ({evidence_label(settings)}): "
          + "; ".join(f"{catalogue.get(k).short} {r.phrase}" for k, r in records.items()))
    return records


def _say_ranges(keys, marked, label: str) -> None:
    """Print the axes' ranges (for the paper's caption) and each point drawn off scale."""
    from s2r.figures import axes

    print(f"axes: {axes.ranges_text(keys)} (each score's meaningful range; a point beyond is "
          f"drawn at the edge, marked '{axes.OFF_SCALE}')")
    for line in axes.off_scale_lines(marked, label):
        print(f"  off scale: {line}")


def _tsne(args, fmt: str) -> bytes:
    from s2r.encoders import get_spec
    from s2r.figures import chart_bytes
    from s2r.figures.projection import projection_frame, projection_scatter
    from s2r.pipeline import project_frameset
    from s2r.progress import tqdm_progress

    settings = settings_from_args(args)
    spec = get_spec(args.encoder, settings=settings)
    cache = cache_from_args(args)
    first_use = announce_first_use([spec.id], args)
    frameset = dataset_from_args(args)
    train_announced(first_use, args)
    with tqdm_progress(f"t-SNE {args.encoder}") as progress:
        proj = project_frameset(frameset, args.encoder, cache=cache, mode=args.mode,
                                perplexity=args.perplexity, device=args.device,
                                progress=progress, settings=settings)
    chart = projection_scatter(projection_frame(frameset, proj), title=spec.name,
                               subtitle=f"mixing number {proj.mixing:.2f}")
    return chart_bytes(chart, fmt, height=_size(args)["width"], **_size(args))


def _method(encoder_id: str, method, settings) -> str:
    from s2r.encoders import get_spec

    return method or ("gradcam" if get_spec(encoder_id, settings=settings).cam_layer else "ig")


def _saliency(args, fmt: str) -> bytes:
    from s2r.commands.saliency import parse_frame_ids
    from s2r.encoders import build_encoder
    from s2r.figures import GridRow, grid_bytes, saliency_grid
    from s2r.pipeline import pair_saliency
    from s2r.progress import tqdm_progress
    from s2r.saliency import map_agreement

    settings = settings_from_args(args)
    cache = cache_from_args(args)
    first_use = announce_first_use([args.encoder], args)
    frameset = dataset_from_args(args).require_domains()
    train_announced(first_use, args)
    encoder = build_encoder(args.encoder, device=args.device, settings=settings)
    if args.frames is None:
        sims = frameset.indices("sim")
        sim_idx = sims[np.unique(np.linspace(0, sims.size - 1, 5).astype(int)[1:-1])]
    else:
        sim_idx = parse_frame_ids(args.frames, frameset)
    method = _method(args.encoder, args.method, settings)
    with tqdm_progress(f"saliency {args.encoder}") as progress:
        res = pair_saliency(frameset, encoder, sim_idx, target=args.target, method=method,
                            action_dim=args.action_dim, cache=cache, progress=progress,
                            settings=settings)
    rows = [GridRow(f"sim {int(i)} / real {int(j)}", [res.sim_frames[k], res.real_frames[k]],
                    [res.sim.maps[k], res.real.maps[k]],
                    notes=["", f"agreement {map_agreement(res.sim.maps[k], res.real.maps[k]):.2f}"])
            for k, (i, j) in enumerate(zip(res.sim_indices, res.real_indices))]
    fig = saliency_grid(rows, show_frames=args.with_frames)
    return grid_bytes(fig, fmt)


def _compare(args, fmt: str) -> bytes:
    from s2r.encoders import build_encoder, get_spec
    from s2r.figures import GridRow, grid_bytes, saliency_grid
    from s2r.pipeline import pair_saliency
    from s2r.saliency import map_agreement

    ids = [e.strip() for e in args.encoders.split(",") if e.strip()]
    if len(ids) != 2:
        raise S2RError(f"--encoders: give exactly two encoder ids, got {args.encoders!r}")
    settings = settings_from_args(args)
    specs = [get_spec(e, settings=settings) for e in ids]
    for spec in specs:
        if not spec.has_image_model:
            raise S2RError(f"--encoders: {spec.id} has no image model (no saliency maps)")
    cache = cache_from_args(args)
    first_use = announce_first_use([s.id for s in specs], args)
    frameset = dataset_from_args(args).require_domains()
    sims = frameset.indices("sim")
    sim_idx = int(sims[sims.size // 2]) if args.frame is None else args.frame
    if sim_idx not in set(sims.tolist()):
        raise S2RError(f"--frame {sim_idx} is not a sim frame of this dataset")
    train_announced(first_use, args)
    rows = []
    for spec in specs:
        encoder = build_encoder(spec.id, device=args.device, settings=settings)
        res = pair_saliency(frameset, encoder, [sim_idx], method=_method(spec.id, None, settings),
                            cache=cache, settings=settings)
        agree = map_agreement(res.sim.maps[0], res.real.maps[0])
        rows.append(GridRow(spec.name, [res.sim_frames[0], res.real_frames[0]],
                            [res.sim.maps[0], res.real.maps[0]],
                            notes=["", f"sim/real agreement {agree:.2f}"]))
    real_idx = int(res.real_indices[0])
    return grid_bytes(saliency_grid(rows, columns=(f"sim frame {sim_idx}",
                                                   f"real frame {real_idx}")), fmt)


def _validation(args, fmt: str) -> bytes:
    import pandas as pd

    from s2r.figures import chart_bytes, real_results
    from s2r.figures import validation as V
    from s2r.figures.report import read_report

    from s2r.figures.axes import score_rows
    from s2r.figures.names import paper_layout

    report = read_report(args.report, args.score)      # bounded, every field checked
    if report.kind == "real-results":
        rows = pd.DataFrame(report.rows)
        _say_ranges([args.score], score_rows(rows, args.score)[0], "encoder")
        chart = real_results.success_scatter(rows, args.score,
                                             catalogue.titles().get(args.score, args.score),
                                             layout=paper_layout(_size(args)["width"]))
        return chart_bytes(chart, fmt, **_size(args))
    rows = V.results_frame(report)
    _say_ranges([args.score], score_rows(rows, args.score)[0], "encoder")
    chart = V.success_scatter(rows, args.score, correlation=report.correlation(args.score),
                              layout=paper_layout(_size(args)["width"]))
    return chart_bytes(chart, fmt, **_size(args))


def _layers(args, fmt: str) -> bytes:
    from s2r.commands.score import layers_from_args
    from s2r.figures import chart_bytes
    from s2r.figures.layers import depth_profile, layer_choices, layers_frame
    from s2r.pipeline.layers import per_encoder_layers, score_encoders_layers
    from s2r.progress import tqdm_progress

    if args.y not in layer_choices():
        raise S2RError(f"--y must be one of {', '.join(layer_choices())}, got {args.y!r}")
    args.layer_score = None
    layers = layers_from_args(args)
    settings = settings_from_args(args)
    ids = _ids(args.encoders, args)
    cache = cache_from_args(args)
    first_use = announce_first_use(ids, args)
    per_encoder_layers(ids, layers, cache=cache, settings=settings)   # names, before work
    frameset = dataset_from_args(args).require_domains()
    train_announced(first_use, args)
    with tqdm_progress("score layers") as progress:
        records = score_encoders_layers(frameset, ids, layers, cache=cache, device=args.device,
                                        best_by=args.y, progress=progress, settings=settings)
    _say_records([args.y], frameset, args)
    chart = depth_profile(layers_frame(records), args.y, bands=not args.no_intervals)
    return chart_bytes(chart, fmt, **_size(args))


def _evidence(args, fmt: str) -> bytes:
    from s2r.evidence import read_evidence
    from s2r.figures import chart_bytes
    from s2r.figures.evidence import forest_height, forest_plot

    evidence = read_evidence(args.evidence)           # bounded, every field checked
    chart = forest_plot(evidence, args.outcome)
    height = forest_height(evidence, args.outcome, per_slot=6)  # a line of print an interval
    return chart_bytes(chart, fmt, **_size(args), height=height, keep_title=True)


_DRAW = {"scores": _scores, "tsne": _tsne, "saliency": _saliency, "compare": _compare,
         "validation": _validation, "layers": _layers, "evidence": _evidence}

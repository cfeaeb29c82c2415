"""Hostile inputs, round 4: degenerate numbers. An encoder whose embeddings are NaN or inf, or
the same for every frame (weights all zero), is refused by every command that embeds and by
the library's t-SNE, projection, mixing number and DIS, with one message from one check
(:func:`s2r.checks.check_embedding_values`): exit 2, one line, nothing written or cached.

The rule: *all* frames the same is refused (no distance, map, neighbour or saliency of them
means anything); an encoder constant on one domain's frames only is a finding, not a fault,
and is scored and mapped. "The same" allows float32 round-off (1e-6 of the largest value).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from s2r.checks import CONSTANT_RTOL, check_embedding_values
from s2r.errors import DegenerateEmbeddingsError, EncoderError, MetricError
from tests.helpers.hostile import Case, run_case
from tests.helpers.simcnn_files import simcnn_state, user_info, write_simcnn

TINY_DEMO = "demo:episodes=3,steps=8,height=64,width=80"
SMALL_VALIDATION = ["--gaps", "0,1", "--rollouts", "2", "--demos", "2"]
FAULTS = {"constant": "flat", "nan": "broken"}  # fault -> the encoder id that has it


def _weights_file(path, fill: float):
    """A SimCNN weights file whose every tensor is ``fill`` (0: constant output; NaN)."""
    from safetensors.torch import save

    tensors = {k: torch.full_like(v, fill) for k, v in simcnn_state(128).items()}
    path.write_bytes(save(tensors, metadata={"s2r_simcnn": json.dumps(user_info())}))


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An encoder config with ``flat`` (all-zero weights), ``broken`` (NaN weights) and
    ``mine`` (ordinary seeded weights), and a fresh cache folder; set for the library calls
    and returned for the command lines."""
    _weights_file(tmp_path / "flat.safetensors", 0.0)
    _weights_file(tmp_path / "broken.safetensors", float("nan"))
    write_simcnn(tmp_path / "mine.safetensors", user_info())
    config = tmp_path / "encoders.toml"
    config.write_text("".join(f'[[encoders]]\nid = "{e}"\nsimcnn = "{tmp_path / e}.safetensors"\n'
                              for e in ("flat", "broken", "mine")))
    values = {"S2R_ENCODERS": str(config), "S2R_CACHE_DIR": str(tmp_path / "cache")}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


def expected(fault: str, encoder=None) -> str:
    """The message of ``fault`` as the shared check words it (a NaN encoder's first frame:
    0, the first frame every command below embeds)."""
    Z = np.zeros((2, 128), np.float32) if fault == "constant" else np.full((2, 128), np.nan)
    with pytest.raises(DegenerateEmbeddingsError) as info:
        check_embedding_values(Z, encoder=encoder)
    return str(info.value)


def _argv(command: str, encoder: str, out) -> tuple[list, list]:
    """(argv, paths it must not write) of ``command`` on ``encoder``."""
    d = TINY_DEMO
    lines = {
        "score": (["score", d, "--encoders", encoder], out / "s.json"),
        "embed": (["embed", d, "--encoder", encoder], out / "e.npz"),
        "project": (["project", d, "--encoder", encoder], out / "p.csv"),
        "saliency": (["saliency", d, "--encoder", encoder, "--frames", "0"], out / "maps"),
        "figure tsne": (["figure", "tsne", d, "--encoder", encoder], out / "t.png"),
        "figure saliency": (["figure", "saliency", d, "--encoder", encoder, "--frames", "0"],
                            out / "fs.png"),
        "figure compare": (["figure", "compare", d, "--encoders", f"{encoder},pixels",
                            "--frame", "0"], out / "fc.png"),
        "validate": (["validate", d, "--encoders", f"{encoder},state,pixels",
                      *SMALL_VALIDATION], out / "v.json"),
    }
    argv, path = lines[command]
    return [*argv, "--out", str(path)], [path]


COMMANDS = ["score", "embed", "project", "saliency", "figure tsne", "figure saliency",
            "figure compare", "validate"]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_degenerate_encoder_with_the_same_line(command, fault, env,
                                                                       tmp_path, capsys):
    from s2r.cache import Cache

    encoder = FAULTS[fault]
    argv, outputs = _argv(command, encoder, tmp_path)
    line = run_case(Case(argv, [], outputs=outputs, env=env), capsys, command,
                    max_seconds=60 if command == "validate" else 30)
    assert line == "error: " + expected(fault, encoder)
    cache = tmp_path / "cache"
    if cache.exists():
        assert not [e.key for e in Cache(cache).ls() if f'"{encoder}"' in json.dumps(e.key)]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_the_library_raises_the_same_error_as_the_commands(fault):
    from s2r.metrics import domain_invariance_score
    from s2r.projection import mixing_number, project
    from s2r.tsne import run_tsne

    rng = np.random.default_rng(0)
    Z = np.tile(rng.normal(size=(1, 8)), (24, 1))
    if fault == "nan":
        Z[5, 3] = np.nan
    domain = np.repeat(["sim", "real"], 12)
    words = expected(fault)
    # one message: the commands' names the encoder, the library's cannot
    assert words == expected(fault, "flat").replace(" of encoder 'flat'", "")
    calls = {"project": lambda: project(Z, domain, n_iter=10, early_exaggeration_iter=10),
             "mixing_number": lambda: mixing_number(Z, domain),
             "run_tsne": lambda: run_tsne(Z, n_iter=10, early_exaggeration_iter=10),
             "domain_invariance_score": lambda: domain_invariance_score(Z, domain, pca_dim=2)}
    for name, call in calls.items():
        with pytest.raises(DegenerateEmbeddingsError) as info:
            call()
        message = str(info.value)
        assert message == (words if fault == "constant" else words.replace("frame 0", "frame 5"))
        assert isinstance(info.value, EncoderError) and isinstance(info.value, MetricError), name


def test_near_constant_is_constant_and_a_small_real_spread_is_not():
    from s2r.projection import mixing_number, project

    rng = np.random.default_rng(1)
    base = rng.normal(size=(1, 16)).astype(np.float32) * 100
    ulps = rng.integers(-2, 3, size=(30, 16)).astype(np.float32)
    noisy = base * (1 + ulps * np.finfo(np.float32).eps)   # a few float32 units apart
    with pytest.raises(DegenerateEmbeddingsError, match="are constant"):
        check_embedding_values(noisy)
    scale = float(np.abs(base).max())
    just = base + np.float32(scale * CONSTANT_RTOL / 2) * (rng.random((30, 16)) > 0.5)
    with pytest.raises(DegenerateEmbeddingsError, match="are constant"):
        check_embedding_values(just.astype(np.float64))
    varied = base + rng.normal(size=(30, 16)).astype(np.float32) * scale * 1e-3
    assert check_embedding_values(varied) is varied
    domain = np.repeat(["sim", "real"], 15)
    assert np.isfinite(mixing_number(varied, domain))
    proj = project(varied, domain, n_iter=20, early_exaggeration_iter=20)
    assert np.isfinite(proj.coords).all()


def test_one_constant_domain_is_a_finding_not_a_fault():
    from s2r.metrics import domain_invariance_score
    from s2r.projection import mixing_number, project

    rng = np.random.default_rng(2)
    Z = np.vstack([np.tile(rng.normal(size=(1, 8)), (15, 1)), rng.normal(size=(15, 8))])
    domain = np.repeat(["sim", "real"], 15)
    proj = project(Z, domain, n_iter=20, early_exaggeration_iter=20)
    assert np.isfinite(proj.coords).all() and np.isfinite(proj.mixing)
    assert np.isfinite(mixing_number(Z, domain))
    assert np.isfinite(domain_invariance_score(Z, domain, pca_dim=3).value)
    # the sim map alone has nothing to fit: place-real refuses it with the same words
    with pytest.raises(DegenerateEmbeddingsError, match="are constant"):
        project(Z, domain, mode="place-real", n_iter=20, early_exaggeration_iter=20)


def test_an_ordinary_encoder_still_embeds_projects_and_explains(env, tmp_path, capsys):
    from s2r.cli import main

    for argv, out in [(["embed", TINY_DEMO, "--encoder", "mine"], tmp_path / "e.npz"),
                      (["project", TINY_DEMO, "--encoder", "mine"], tmp_path / "p.csv"),
                      (["saliency", TINY_DEMO, "--encoder", "mine", "--frames", "0"],
                       tmp_path / "maps")]:
        assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
        assert out.exists()
    assert "error" not in capsys.readouterr().err


def test_a_constant_array_cached_before_is_refused_when_read(env, tmp_path, capsys):
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.embed import embeddings_key
    from s2r.settings import current

    frameset = load_dataset(TINY_DEMO)
    cache = Cache(tmp_path / "cache")
    cache.get_or_compute_array(embeddings_key(frameset, "mine", settings=current()),
                               lambda: np.ones((len(frameset), 128), np.float32))
    cache.close()
    line = run_case(Case(["embed", TINY_DEMO, "--encoder", "mine", "--out",
                          str(tmp_path / "e.npz")], [], outputs=[tmp_path / "e.npz"],
                         env=env), capsys)
    assert line == "error: " + expected("constant", "mine")


def test_saliency_judges_constant_only_on_frames_that_differ():
    from s2r.pipeline.saliency import check_pair_embeddings
    from tests.helpers.stand_ins import StandInEncoder

    flat = StandInEncoder()
    with torch.no_grad():
        flat.proj.weight.zero_()                      # the bias for every frame
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 256, size=(1, 8, 8, 3), dtype=np.uint8) for _ in range(2))
    check_pair_embeddings(flat, a, a.copy(), [4], [4])   # one frame twice (a gap-0 pair)
    with pytest.raises(DegenerateEmbeddingsError, match="'stand-in' are constant"):
        check_pair_embeddings(flat, a, b, [4], [9])
    check_pair_embeddings(StandInEncoder(), a, b, [4], [9])
    with pytest.raises(DegenerateEmbeddingsError, match="NaN or inf .first at frame 9"):
        check_pair_embeddings(StandInEncoder(nan_at=0), b, a, [9], [4])


def test_onnx_runtime_check_takes_nan_for_nan_as_the_same_output():
    from s2r.encoders.runtime import _mismatch

    nan = torch.full((2, 4), float("nan"))
    assert _mismatch(nan, nan.clone()) is None
    assert "NaN or inf where torch's is not" in _mismatch(nan, torch.zeros(2, 4))
    assert "NaN or inf where torch's is not" in _mismatch(torch.zeros(2, 4), nan)
    assert _mismatch(torch.ones(2, 4), torch.ones(2, 4) * 2).startswith("its output differs")


def test_the_dashboards_live_tsne_gets_the_error_and_draws_nothing(env):
    """The Projection page shows a live map's error with ``st.error`` (an S2RError)."""
    from s2r.cache import NullCache
    from s2r.datasets import load_dataset
    from s2r.pipeline import project_frameset
    from ui.live_tsne import Job

    frameset = load_dataset(TINY_DEMO)
    job = Job(("fingerprint", "flat"), np.arange(len(frameset)))
    job.start(lambda on_snapshot, progress: project_frameset(
        frameset, "flat", cache=NullCache(), on_snapshot=on_snapshot, progress=progress))
    job.thread.join(60)
    assert isinstance(job.error, DegenerateEmbeddingsError)
    assert str(job.error) == expected("constant", "flat")
    assert job.snapshot is None                             # no NaN map was ever drawn


def test_a_cache_folder_holding_only_the_graphs_a_pass_wrote_is_still_a_cache(tmp_path):
    """A pass that embeds without caching (``--no-cache``, a refused encoder, saliency's
    check) may leave ONNX Runtime's ``graphs`` in a new cache folder: the next command must
    still use that folder."""
    from s2r.cache import Cache

    (tmp_path / "c" / "graphs").mkdir(parents=True)
    (tmp_path / "c" / "graphs" / ("0" * 32 + ".json")).write_text("{}")
    cache = Cache(tmp_path / "c")
    assert cache.get_or_compute_json({"kind": "t"}, lambda: {"v": 1}) == {"v": 1}
    cache.close()
    (tmp_path / "d" / "mine").mkdir(parents=True)      # a folder of someone else's: refused
    with pytest.raises(Exception, match="not an s2r cache folder"):
        Cache(tmp_path / "d")

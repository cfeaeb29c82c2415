"""The embedding pipeline: streaming, order, OOM back-off, caching, and the embed/cache CLI."""

from __future__ import annotations

import json
import threading
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from s2r.cache import Cache
from s2r.embed import compute as embed_compute
from s2r.embed import keys as embed_keys
from s2r.embed import (PREPROCESS_VERSION, compute_embeddings, default_batch_size, embed_frames,
                       embed_frameset, embeddings_key)
from s2r.errors import DataError, EncoderError, S2RError
from s2r.frameset import FrameSet


# ----------------------------------------------------------------------------- stand-ins
class StandInEncoder(torch.nn.Module):
    """Follows the Encoder protocol: preprocess, forward, embed, spec, device, fingerprint.

    ``oom_above``: ``embed`` raises an out-of-memory error for batches larger than this.
    """

    def __init__(self, dim=6, *, oom_above=None, oom_error=None, nan_at=None):
        super().__init__()
        self.spec = SimpleNamespace(id="stand-in", dim=dim, family="cnn", name="Stand-in")
        self.device = torch.device("cpu")
        self.weights_fingerprint = "stand-in-weights-v1"
        gen = torch.Generator().manual_seed(0)
        self.proj = torch.nn.Linear(3 * 4 * 4, dim)
        with torch.no_grad():
            self.proj.weight.copy_(torch.randn(dim, 48, generator=gen))
            self.proj.bias.copy_(torch.randn(dim, generator=gen))
        self.oom_above = oom_above
        self.oom_error = oom_error or torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB")
        self.nan_at = nan_at
        self.calls: list[int] = []  # batch sizes embed was called with

    def preprocess(self, frames):
        x = torch.as_tensor(np.asarray(frames)).permute(0, 3, 1, 2).float() / 255.0
        return torch.nn.functional.adaptive_avg_pool2d(x, (4, 4))

    def forward(self, x):
        return self.proj(x.flatten(1))

    def embed(self, frames):
        self.calls.append(int(frames.shape[0]))
        if self.oom_above is not None and frames.shape[0] > self.oom_above:
            raise self.oom_error
        with torch.no_grad():
            z = self.forward(self.preprocess(frames)).numpy().astype(np.float32)
        if self.nan_at is not None:
            z[min(self.nan_at, len(z) - 1)] = np.nan
        return z


class CountingSource:
    """Lazy frames computed from their index; counts frames alive in returned arrays."""

    def __init__(self, n, h=8, w=8):
        self.shape = (n, h, w, 3)
        self.alive = 0
        self.max_alive = 0
        self.reads = 0
        self._lock = threading.Lock()

    def _release(self, k):
        with self._lock:
            self.alive -= k

    def read(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        n, h, w, _ = self.shape
        base = (idx[:, None, None, None] * 7 + np.arange(h * w * 3).reshape(1, h, w, 3) * 13)
        frames = (base % 251).astype(np.uint8)
        with self._lock:
            self.reads += 1
            self.alive += idx.size
            self.max_alive = max(self.max_alive, self.alive)
        weakref.finalize(frames, self._release, int(idx.size))
        return frames


def make_frameset(source):
    n = source.shape[0]
    half = n // 2
    return FrameSet(images=source, actions=np.zeros((n, 2), np.float32),
                    domain=np.array(["sim"] * half + ["real"] * (n - half)),
                    episode=np.arange(n) // 10, step=np.arange(n) % 10, name="counting")


@pytest.fixture
def frameset():
    return make_frameset(CountingSource(150))


def reference(encoder, frameset, indices, batch):
    """Per-batch ``encoder.embed`` on the same frames, concatenated."""
    idx = np.asarray(indices)
    return np.concatenate([encoder.embed(frameset.read_images(idx[s:s + batch]))
                           for s in range(0, idx.size, batch)])


# ----------------------------------------------------------------------------- pipeline
def test_output_equals_per_batch_embed_in_order(frameset):
    enc = StandInEncoder()
    out = compute_embeddings(frameset, enc, batch_size=16)
    assert out.shape == (150, 6) and out.dtype == np.float32
    np.testing.assert_array_equal(out, reference(enc, frameset, np.arange(150), 16))
    # rows really follow the frames: frames differ, so neighbouring rows differ
    assert not np.allclose(out[0], out[1])


def test_indices_keep_their_order_across_batches(frameset):
    enc = StandInEncoder()
    idx = np.random.default_rng(0).permutation(150)[:77]
    out = compute_embeddings(frameset, enc, indices=idx, batch_size=10)
    assert out.shape == (77, 6)
    full = compute_embeddings(frameset, enc, batch_size=64)
    np.testing.assert_allclose(out, full[idx], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out, reference(enc, frameset, idx, 10))
    assert compute_embeddings(frameset, enc, indices=[]).shape == (0, 6)


def test_streaming_keeps_memory_bounded():
    source = CountingSource(6000, 8, 8)
    fs = make_frameset(source)
    enc = StandInEncoder()
    calls = []
    out = compute_embeddings(fs, enc, batch_size=40, progress=lambda d, t, m: calls.append((d, t)))
    assert out.shape == (6000, 6)
    assert source.reads == 150
    # the batch being embedded + one queued + one being read: never more than 3 batches
    assert source.max_alive <= 3 * 40, source.max_alive
    assert source.alive == 0
    np.testing.assert_array_equal(out[-40:], enc.embed(fs.read_images(np.arange(5960, 6000))))
    dones = [d for d, _ in calls]
    assert dones[0] == 0 and dones[-1] == 6000 and dones == sorted(dones)
    assert {t for _, t in calls} == {6000}


def test_reader_errors_reach_the_caller_and_stop_the_thread(frameset):
    class Broken(CountingSource):
        def read(self, indices):
            if np.max(indices) >= 50:
                raise DataError("frame file 50.png is truncated")
            return super().read(indices)

    fs = make_frameset(Broken(150))
    before = threading.active_count()
    with pytest.raises(DataError, match="50.png"):
        compute_embeddings(fs, StandInEncoder(), batch_size=16)
    assert threading.active_count() == before


@pytest.mark.parametrize("error", [
    torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    RuntimeError("MPS backend out of memory (MPS allocated: 8 GB)"),
    RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"),
])
def test_out_of_memory_halves_the_batch_and_retries(frameset, error):
    enc = StandInEncoder(oom_above=10, oom_error=error)
    messages = []
    out = compute_embeddings(frameset, enc, batch_size=40,
                             progress=lambda d, t, m: messages.append(m))
    np.testing.assert_allclose(out, reference(StandInEncoder(), frameset, np.arange(150), 150),
                               rtol=1e-6, atol=1e-6)
    # 40 fails, 20 fails, 10 works; later batches go straight to 10
    assert enc.calls[:3] == [40, 20, 10]
    assert max(enc.calls[3:]) == 10
    assert sum(c for c in enc.calls if c <= 10) == 150
    assert "reduced after out-of-memory" in messages[-1]


def test_tensor_batches_of_the_cuda_path(frameset, monkeypatch):
    """On CUDA the reader hands pinned torch tensors to the encoder; same rows, same order."""
    seen = []

    def as_tensor(frames, pin):
        seen.append(pin)
        return torch.from_numpy(np.ascontiguousarray(frames))  # pinning needs a GPU

    monkeypatch.setattr(embed_compute, "host_batch", as_tensor)
    enc = StandInEncoder(oom_above=10)
    out = compute_embeddings(frameset, enc, batch_size=32)
    assert seen and not any(seen)  # a CPU encoder never asks for pinned memory
    np.testing.assert_allclose(out, reference(StandInEncoder(), frameset, np.arange(150), 150),
                               rtol=1e-6, atol=1e-6)


def test_out_of_memory_with_one_frame_is_an_encoder_error(frameset):
    with pytest.raises(EncoderError, match="out of memory.*batch of one"):
        compute_embeddings(frameset, StandInEncoder(oom_above=0), batch_size=4)


def test_other_runtime_errors_are_not_retried(frameset):
    enc = StandInEncoder(oom_above=3, oom_error=RuntimeError("shape mismatch in conv"))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        compute_embeddings(frameset, enc, batch_size=8)
    assert enc.calls == [8]


def test_nan_embeddings_are_reported(frameset):
    with pytest.raises(EncoderError, match="NaN.*frame 37"):
        compute_embeddings(frameset, StandInEncoder(nan_at=5), batch_size=32,
                           indices=np.arange(32, 64))


def test_wrong_dim_is_reported(frameset):
    enc = StandInEncoder()
    enc.spec.dim = 7
    with pytest.raises(EncoderError, match="6-D embeddings.*dim=7"):
        compute_embeddings(frameset, enc)


def test_embed_frames_validates_and_backs_off():
    enc = StandInEncoder(oom_above=3)
    frames = CountingSource(9).read(np.arange(9))
    z = embed_frames(enc, frames, batch_size=8)
    np.testing.assert_allclose(z, StandInEncoder().embed(frames), rtol=1e-6, atol=1e-6)
    assert embed_frames(enc, frames[:0]).shape == (0, 6)
    with pytest.raises(DataError, match="uint8"):
        embed_frames(enc, frames.astype(np.float32))
    with pytest.raises(DataError, match=r"\(B, H, W, 3\)"):
        embed_frames(enc, frames[0])


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_batch_size(frameset, bad):
    with pytest.raises(S2RError, match="batch size"):
        compute_embeddings(frameset, StandInEncoder(), batch_size=bad)


def test_default_batch_size():
    enc = StandInEncoder()
    assert default_batch_size(enc) == 64
    enc.device = torch.device("cuda", 0)
    assert default_batch_size(enc) == 256
    enc.batch_size = 12
    assert default_batch_size(enc) == 12


# ----------------------------------------------------------------------------- caching
def test_embed_frameset_caches_and_hits_without_recompute(frameset, tmp_path):
    cache = Cache(tmp_path / "cache")
    enc = StandInEncoder()
    first = embed_frameset(frameset, enc, cache=cache, batch_size=32)
    n_calls = len(enc.calls)
    progress = []
    second = embed_frameset(frameset, enc, cache=cache,
                            progress=lambda d, t, m: progress.append((d, t)))
    assert len(enc.calls) == n_calls  # the model did not run again
    assert isinstance(second, np.memmap) and not second.flags.writeable
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(second, compute_embeddings(frameset, enc))
    assert progress[-1] == (150, 150)
    key = embeddings_key(frameset, enc)
    assert key == {"kind": "embeddings", "frameset": frameset.fingerprint, "encoder": "stand-in",
                   "weights": "stand-in-weights-v1", "preprocess": PREPROCESS_VERSION}
    assert [e.key for e in cache.ls()] == [key]
    # cache=False computes and stores nothing
    plain = embed_frameset(frameset, enc, cache=False)
    assert len(enc.calls) > n_calls and len(cache.ls()) == 1
    np.testing.assert_array_equal(plain, first)


def test_key_changes_with_weights_frameset_and_preprocessing(frameset, monkeypatch, tmp_path):
    enc = StandInEncoder()
    key = embeddings_key(frameset, enc)
    other = StandInEncoder()
    other.weights_fingerprint = "retrained"
    assert embeddings_key(frameset, other) != key
    assert embeddings_key(frameset.subset(np.arange(100)), enc) != key
    monkeypatch.setattr(embed_keys, "PREPROCESS_VERSION", PREPROCESS_VERSION + 1)
    assert embeddings_key(frameset, enc)["preprocess"] == PREPROCESS_VERSION + 1
    # a bumped preprocessing version is a miss: the model runs again
    cache = Cache(tmp_path / "cache")
    embed_frameset(frameset, enc, cache=cache)
    n = len(enc.calls)
    monkeypatch.setattr(embed_keys, "PREPROCESS_VERSION", PREPROCESS_VERSION + 2)
    embed_frameset(frameset, enc, cache=cache)
    assert len(enc.calls) > n and len(cache.ls()) == 2


def test_default_cache_is_s2r_cache_dir(frameset, tmp_path, monkeypatch):
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "envcache"))
    embed_frameset(frameset, StandInEncoder())
    assert [e.kind for e in Cache(tmp_path / "envcache").ls()] == ["embeddings"]


# ----------------------------------------------------------------------------- CLI
def test_cli_cache_ls_and_clear(tmp_path, capsys, frameset):
    from s2r.cli import main

    cache = Cache()  # $S2R_CACHE_DIR from conftest
    embed_frameset(frameset, StandInEncoder(), cache=cache)
    cache.get_or_compute_json({"kind": "scores", "encoder": "x"}, lambda: {"dis": 1})
    capsys.readouterr()
    assert main(["cache", "ls", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["root"] == str(cache.root)
    kinds = {e["kind"]: e for e in listing["entries"]}
    assert set(kinds) == {"embeddings", "scores"}
    assert kinds["embeddings"]["shape"] == [150, 6]
    assert kinds["embeddings"]["key"]["frameset"] == frameset.fingerprint
    assert main(["cache", "ls"]) == 0
    table = capsys.readouterr().out
    assert frameset.fingerprint in table and "stand-in" in table and "150x6" in table
    assert "2 entries" in table
    assert main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert cache.ls() == []
    assert main(["cache", "ls", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == []


# ----------------------------------------------------------------------------- real encoders
@pytest.fixture(scope="module")
def resnet18_random():
    from s2r.encoders import build_encoder

    return build_encoder("resnet18@random", device="cpu")


def test_resnet18_pipeline_equals_per_batch_embed(small_demo, resnet18_random):
    enc = resnet18_random
    idx = np.random.default_rng(1).permutation(len(small_demo))[:8]
    out = compute_embeddings(small_demo, enc, indices=idx, batch_size=3)
    assert out.shape == (8, 512) and out.dtype == np.float32
    np.testing.assert_allclose(out, reference(enc, small_demo, idx, 3), rtol=1e-5, atol=1e-5)
    # different frames give different embeddings (a real model, not a constant)
    assert np.abs(out[0] - out[1]).max() > 1e-3


def test_pixels_through_embed_frameset_with_id(small_demo, tmp_path, monkeypatch):
    import s2r.encoders.build as build

    builds = []
    real_build = build.build_encoder
    monkeypatch.setattr(build, "build_encoder",
                        lambda *a, **k: builds.append(a) or real_build(*a, **k))
    cache = Cache(tmp_path / "cache")
    z = embed_frameset(small_demo, "pixels", cache=cache, device="cpu", batch_size=32)
    assert z.shape == (len(small_demo), 3072) and z.dtype == np.float32
    enc = real_build("pixels", device="cpu")
    np.testing.assert_allclose(z[:10], enc.embed(small_demo.read_images(np.arange(10))),
                               rtol=1e-6, atol=1e-6)
    assert embeddings_key(small_demo, "pixels")["weights"] == enc.weights_fingerprint
    # with a cheap weights fingerprint from s2r.encoders, a hit never builds the model
    import s2r.encoders

    monkeypatch.setattr(s2r.encoders, "weights_fingerprint",
                        lambda spec: enc.weights_fingerprint, raising=False)
    builds.clear()
    again = embed_frameset(small_demo, "pixels", cache=cache)
    assert builds == []
    np.testing.assert_array_equal(again, z)


def test_unknown_encoder_id_is_an_encoder_error(small_demo):
    with pytest.raises(EncoderError, match="no-such-encoder"):
        embed_frameset(small_demo, "no-such-encoder", cache=False)


def test_cli_embed_writes_npz_and_reuses_cache(tmp_path, capsys):
    from s2r.cli import main

    out = tmp_path / "sub" / "z.npz"
    argv = ["embed", "demo:episodes=2,steps=4,height=64,width=64", "--encoder", "pixels",
            "--out", str(out), "--batch-size", "5", "--device", "cpu"]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    with np.load(out) as f:
        assert set(f.files) == {"embeddings", "domain", "episode", "step", "actions", "encoder",
                                "precision"}
        z, domain, episode, step, actions = (f[k] for k in ("embeddings", "domain", "episode",
                                                            "step", "actions"))
        assert str(f["encoder"]) == "pixels" and str(f["precision"]) == "auto"
    assert z.shape == (16, 3072) and z.dtype == np.float32
    assert domain.tolist() == ["sim"] * 8 + ["real"] * 8
    assert episode.shape == step.shape == (16,) and actions.shape[0] == 16
    assert len(set(episode[:8]) & set(episode[8:])) == 0
    assert [e.kind for e in Cache().ls()] == ["embeddings"]
    # second run: same numbers, still one cache entry
    out2 = tmp_path / "z2.npz"
    assert main(argv[:-6] + ["--out", str(out2)]) == 0
    with np.load(out2) as f:
        np.testing.assert_array_equal(f["embeddings"], z)
    assert len(Cache().ls()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--out", "z.txt"], ".npz"),
    (["--out", "z.npz", "--encoder", "nope"], "nope"),
    (["--out", "z.npz", "--batch-size", "0"], "batch-size"),
])
def test_cli_embed_errors(tmp_path, capsys, monkeypatch, extra, message):
    from s2r.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["embed", "demo:episodes=1,steps=2,height=64,width=64", "--encoder", "pixels", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_key_fields_read_embeddings_keys_and_keys_built_on_them():
    from s2r.embed import key_fields

    emb = {"kind": "embeddings", "frameset": "ab", "encoder": "resnet18", "weights": "w",
           "preprocess": 1}
    assert key_fields(emb) == {"encoder": "resnet18", "frameset": "ab", "precision": "exact"}
    int8 = {**emb, "precision": "int8/v1"}
    assert key_fields({"kind": "scores", "embeddings": int8})["precision"] == "int8"
    assert key_fields({"kind": "other"}) == {"encoder": None, "frameset": None,
                                             "precision": "exact"}

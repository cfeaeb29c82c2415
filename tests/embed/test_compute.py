"""The embed loop (s2r.embed.compute, batching, backoff): streaming, order, bounded memory,
out-of-memory back-off, checks on what an encoder returns, batch sizes."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from s2r.embed import compute as embed_compute
from s2r.embed import compute_embeddings, default_batch_size, embed_frames
from s2r.errors import DataError, EncoderError, S2RError
from tests.helpers.stand_ins import CountingSource, StandInEncoder, make_frameset, reference


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
    assert default_batch_size(enc) == 8       # bench/bench_batch_size.py: 1.1-1.7x over 64 on CPU
    enc.device = torch.device("cuda", 0)
    assert default_batch_size(enc) == 256
    enc.batch_size = 12
    assert default_batch_size(enc) == 12


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

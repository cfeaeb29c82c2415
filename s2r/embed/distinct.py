"""Embeddings of several FrameSets that share frames, each distinct frame embedded once.

One demo rendered at several gaps (``python -m s2r validate``) holds the same sim frames at
every gap, and at gap 0 its real frames are its sim frames pixel for pixel. :func:`embed_distinct`
hashes every frame's pixels, embeds only the frames no earlier FrameSet (cached or computed)
held, and caches each FrameSet's full array under its own embeddings key, exactly where
:func:`~s2r.embed.embed_frameset` looks (so the scores that follow are cache hits). It reads
every frame once more to hash it: meant for small rendered sets, not 50,000-frame datasets.
"""

from __future__ import annotations

import hashlib
from typing import Optional, Sequence

import numpy as np

from s2r.checks import check_embedding_values
from s2r.embed.compute import compute_embeddings
from s2r.embed.keys import embeddings_key, get_or_compute
from s2r.embed.resolve import build, spec_of
from s2r.progress import ProgressCallback

__all__ = ["embed_distinct", "frame_digests"]

_READ = 256


def frame_digests(frameset) -> list:
    """A digest of every frame's pixels (shape and bytes), in order."""
    out = []
    for start in range(0, len(frameset), _READ):
        images = frameset.read_images(np.arange(start, min(start + _READ, len(frameset))))
        for image in images:
            h = hashlib.blake2b(digest_size=16)
            h.update(repr(image.shape).encode())
            h.update(np.ascontiguousarray(image).tobytes())
            out.append(h.digest())
    return out


def embed_distinct(framesets: Sequence, encoder_id: str, *, cache, device=None,
                   progress: Optional[ProgressCallback] = None, settings=None) -> list:
    """Every FrameSet's embeddings ``(N_i, D)``, read from or written to the cache under its
    own key, each distinct frame embedded once.

    Parameters
    ----------
    framesets : sequence of FrameSet
    encoder_id : str
        A registry id with an image model (exact precision).
    cache : Cache
    device : str, optional
    progress : ProgressCallback, optional
        ``progress(frames_done, frames_to_embed, message)``.
    settings : s2r.settings.Settings, optional
        Handed down: where the weights file is.

    Returns
    -------
    list of ndarray (N_i, D) float32

    Raises
    ------
    DegenerateEmbeddingsError
        A FrameSet's embeddings have NaN or inf or are the same for every frame
        (:func:`s2r.checks.check_embedding_values`); nothing is cached for it.
    """
    spec, _ = spec_of(encoder_id, settings)
    known: dict = {}
    encoder = None
    out = []
    for frameset in framesets:
        digests = frame_digests(frameset)

        def compute(_fs=frameset, _digests=digests) -> np.ndarray:
            nonlocal encoder
            first = {}
            for i, d in enumerate(_digests):
                if d not in known:
                    first.setdefault(d, i)
            if first:
                encoder = encoder if encoder is not None else build(spec, device, settings)
                Z = compute_embeddings(_fs, encoder, indices=list(first.values()),
                                       progress=progress)
                known.update(zip(first, np.asarray(Z, dtype=np.float32)))
            return check_embedding_values(
                np.stack([known[d] for d in _digests]).astype(np.float32), encoder=spec.id)

        Z = get_or_compute(cache, "array",
                           lambda _fs=frameset: embeddings_key(_fs, spec, device=device,
                                                               settings=settings),
                           compute, encoder=spec, settings=settings)
        check_embedding_values(Z, encoder=spec.id)    # as embed_frameset checks its result
        for d, row in zip(digests, np.asarray(Z)):
            known.setdefault(d, row)
        out.append(Z)
    return out

"""Cache keys of embeddings (s2r.embed.keys): what changes them, and the fields read from them."""

from __future__ import annotations

import numpy as np

from s2r.cache import Cache
from s2r.embed import keys as embed_keys
from s2r.embed import PREPROCESS_VERSION, embed_frameset, embeddings_key
from tests.helpers.stand_ins import StandInEncoder


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


def test_key_fields_read_embeddings_keys_and_keys_built_on_them():
    from s2r.embed import key_fields

    emb = {"kind": "embeddings", "frameset": "ab", "encoder": "resnet18", "weights": "w",
           "preprocess": 1}
    assert key_fields(emb) == {"encoder": "resnet18", "frameset": "ab", "precision": "exact"}
    int8 = {**emb, "precision": "int8/v1"}
    assert key_fields({"kind": "scores", "embeddings": int8})["precision"] == "int8"
    assert key_fields({"kind": "other"}) == {"encoder": None, "frameset": None,
                                             "precision": "exact"}

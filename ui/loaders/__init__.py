"""Cached loaders: the dashboard's reads of the library, by concern, behind Streamlit's caches.

- :mod:`.data` -- the disk cache, datasets (FrameSets), frames, masks, frame pairs;
- :mod:`.encoders` -- built encoders, the device and precision, weights status, embeddings;
- :mod:`.saliency` -- saliency targets and the maps of frame pairs;
- :mod:`.projection` -- t-SNE maps;
- :mod:`.validation` -- the validation report, recorded rollouts and their saliency, your
  robot's results against the scores.

The policy, the same in each:

- Models and datasets (objects that must not be copied) sit behind ``st.cache_resource``
  with a bounded ``max_entries``; they are never mutated after they are built.
- Arrays derived from embeddings (saliency maps, frames) sit behind ``st.cache_data``
  (returns copies), keyed by hashable ids; unhashable objects are passed as ``_arguments``.
- Embeddings, score records and t-SNE maps live in the library's disk cache
  (:class:`s2r.cache.Cache`), so a page reload or a new session never recomputes them.

Every key includes the cache root (``$S2R_CACHE_DIR``) so that two caches (tests, benches)
never see each other's results through Streamlit's in-process caches. The work itself is the
library's: a loader only decides what is cached and for how long.
"""

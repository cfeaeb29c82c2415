"""Names of the choices the library accepts, in a module light enough (no torch) for the CLI
to build its parser and the app its widgets without importing the heavy modules."""

#: Saliency methods of :func:`s2r.saliency.compute_saliency`.
METHODS = ("gradcam", "ig", "occlusion")
#: Saliency targets of a frame pair (:func:`s2r.pipeline.saliency.pair_saliency`).
TARGET_KINDS = ("embedding", "action", "domain", "pair")

"""Streamlit-side glue of the s2r dashboard: session keys, cached loaders, charts, widgets.

Pages import from here; nothing here computes metrics itself -- every number comes from the
``s2r`` library. The library never imports Streamlit; this package is the only place that
joins the two.
"""

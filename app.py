"""s2r dashboard: the router. Run with ``streamlit run app.py`` (``make run``).

Every run sets the app up once (:func:`ui.guards.app_setup`: page config, the session's
named state, the user's encoder config, the page URL read on a session's first run), then
runs the page the user opened. The pages are scripts in ``app_pages/``: Home (pick the dataset
and encoders, compute), Scores, Projection, Saliency, Compare, Layers and Validation. Every number
comes from the ``s2r`` library; the pages only lay out widgets (see ``ui/`` for the glue).
"""

from __future__ import annotations

import streamlit as st

from ui import guards

PAGES = [
    st.Page("app_pages/0_Home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/1_Scores.py", title="Scores", icon=":material/scatter_plot:"),
    st.Page("app_pages/2_Projection.py", title="Projection", icon=":material/bubble_chart:"),
    st.Page("app_pages/3_Saliency.py", title="Saliency", icon=":material/local_fire_department:"),
    st.Page("app_pages/4_Compare.py", title="Compare", icon=":material/compare:"),
    st.Page("app_pages/6_Layers.py", title="Layers", icon=":material/stacked_line_chart:"),
    st.Page("app_pages/5_Validation.py", title="Validation", icon=":material/verified:"),
]

page = st.navigation(PAGES)
guards.app_setup()
page.run()

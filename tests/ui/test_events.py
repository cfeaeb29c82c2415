"""ui/events.py: what a click on a chart selected, from every shape of Streamlit's event."""

from __future__ import annotations

import pytest

from ui.events import selected_values


@pytest.mark.parametrize("event, expected", [
    (None, []), ({}, []), ({"selection": {}}, []), ({"selection": {"pick": []}}, []),
    ({"selection": {"pick": [{"encoder": "a"}, {"encoder": "b"}]}}, ["a", "b"]),
    ({"selection": {"pick": {"encoder": "a"}}}, ["a"]),
    ({"selection": {"pick": {}}}, []),
    ({"selection": {"other": [{"encoder": "a"}]}}, []),
    ("not an event", []),
])
def test_selected_values_reads_every_event_shape(event, expected):
    assert selected_values(event, "pick", "encoder") == expected

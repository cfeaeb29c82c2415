"""The one progress adapter (issue 25 item 5): library callbacks drawn on st.progress bars."""

from __future__ import annotations

from ui.progress import count_text, megabytes_text, progress_bar


class Bar:
    def __init__(self):
        self.calls = []

    def progress(self, value, text=None):
        self.calls.append((value, text))


def test_the_bar_is_redrawn_every_step_on_new_messages_and_at_the_end():
    bar, messages = Bar(), []
    cb = progress_bar(bar, text=count_text, step=0.1, on_message=messages.append)
    for done in range(0, 101):
        cb(done, 100, "embedding")
    cb(3, 10, "bootstrap")
    cb(0, 0, "")
    fracs = [v for v, _ in bar.calls]
    assert fracs[:3] == [0.0, 0.1, 0.2] and fracs[10] == 1.0   # 11 redraws for 101 calls
    assert bar.calls[10][1] == "embedding (100/100)"
    assert bar.calls[11] == (0.3, "bootstrap (3/10)")
    assert bar.calls[12] == (0.0, "working (0/0)")             # no total: 0, the default text
    assert messages == ["embedding", "bootstrap", "working"]


def test_texts():
    assert megabytes_text(3 * 2**20, 8 * 2**20, "resnet18") == "resnet18: 3.0 MB of 8.0 MB"
    assert megabytes_text(2**19, 0, "x") == "x: 0.5 MB"
    bar = Bar()
    progress_bar(bar, default="t-SNE")(5, 10)
    assert bar.calls == [(0.5, "t-SNE")]

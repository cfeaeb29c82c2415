"""Write Meta-World's picture rows for docs/metaworld.md, the same state in every column of a
row (button press and assembly, one step each, drawn by the corner camera at 96 x 128, shown
at twice the size):

- ``metaworld_looks.png``: the sim look (= the real look at gap 0, pixel for pixel), then real
  episodes 0, 1 and 2 of the seed at gap 0.5 and at gap 1 (each episode its own colours,
  lights and camera; the textures the seed's);
- ``metaworld_shifts.png``: the sim look, then real episode 0 of the seed at gap 1 in each
  kind of shift (``shift=``, :data:`s2r.worlds.metaworld.look.SHIFTS`).

Usage::

    python bench/make_metaworld_grid.py [--seed 0] [--out docs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_demo_grid import labelled_grid  # noqa: E402

from s2r.worlds.metaworld import sim  # noqa: E402
from s2r.worlds.metaworld.look import SHIFTS, draw_look, draw_textures  # noqa: E402
from s2r.worlds.metaworld.pool import close_pool, shared_pool  # noqa: E402
from s2r.worlds.metaworld.tasks import TASKS  # noqa: E402

ROWS = (("button-press-topdown-v3", 26), ("assembly-v3", 30))

#: Picture -> (column titles after "sim", looks of one state: (gap, episode, kind) each).
PICTURES = {
    "metaworld_looks.png": ([f"gap {g:g}, look {e}" for g in (0.5, 1.0) for e in range(3)],
                            [(g, e, "all") for g in (0.5, 1.0) for e in range(3)]),
    "metaworld_shifts.png": ([f"shift={kind}" for kind in SHIFTS],
                             [(1.0, 0, kind) for kind in SHIFTS]),
}


def picture(seed: int, looks) -> tuple[list, list]:
    """The rows (frames at twice the size) and row labels of one picture."""
    rows, labels = [], []
    for task, step in ROWS:
        spec = TASKS[task]
        ep = sim.expert_episode(spec, 2, sim.layout(spec, seed, "dataset", 0), step + 1,
                                until_success=False)
        snap = [ep.snapshots[step]]
        key = (task, "corner", 96, 128)
        groups = [(key, None, None, 0.0, snap)]
        groups += [(key, draw_textures(seed, gap, kind), draw_look(seed, e, kind), gap, snap)
                   for gap, e, kind in looks]
        frames = np.concatenate(shared_pool().paint(groups))
        rows.append(np.stack([np.asarray(Image.fromarray(f).resize((256, 192), Image.NEAREST))
                              for f in frames]))
        labels.append(f"{task.replace('-v3', '')}\nstep {step}")
    return rows, labels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (columns, looks) in PICTURES.items():
        rows, labels = picture(args.seed, looks)
        sim_title = "sim (= gap 0)" if name == "metaworld_looks.png" else "sim"
        labelled_grid(rows, labels, [sim_title, *columns], left=190).save(args.out / name,
                                                                          optimize=True)
        print(f"wrote {args.out / name}")
    close_pool()
    return 0


if __name__ == "__main__":
    sys.exit(main())

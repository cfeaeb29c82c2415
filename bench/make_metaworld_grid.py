"""Write docs/metaworld_looks.png: Meta-World's sim look and its real looks at gaps 0.5 and 1.

Rows: button-press-topdown-v3 and assembly-v3, the first episode of the dataset of ``--seed``
at one step each, drawn by the corner camera at 96 x 128 (the validation's frames; shown at
twice the size). Columns: the sim look (= the real look at gap 0, pixel for pixel), then real
episodes 0, 1 and 2 of the seed at gap 0.5 and at gap 1 (each episode its own colours, lights
and camera; the textures the seed's) -- the same state in every column.

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
from s2r.worlds.metaworld.look import draw_look, draw_textures  # noqa: E402
from s2r.worlds.metaworld.pool import close_pool, shared_pool  # noqa: E402
from s2r.worlds.metaworld.tasks import TASKS  # noqa: E402

ROWS = (("button-press-topdown-v3", 26), ("assembly-v3", 30))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = parser.parse_args(argv)
    rows, labels = [], []
    for task, step in ROWS:
        spec = TASKS[task]
        ep = sim.expert_episode(spec, 2, sim.layout(spec, args.seed, "dataset", 0), step + 1,
                                until_success=False)
        snap = [ep.snapshots[step]]
        key = (task, "corner", 96, 128)
        groups = [(key, None, None, 0.0, snap)]
        for gap in (0.5, 1.0):
            groups += [(key, draw_textures(args.seed, gap), draw_look(args.seed, e), gap, snap)
                       for e in range(3)]
        frames = np.concatenate(shared_pool().paint(groups))
        rows.append(np.stack([np.asarray(Image.fromarray(f).resize((256, 192), Image.NEAREST))
                              for f in frames]))
        labels.append(f"{task.replace('-v3', '')}\nstep {step}")
    close_pool()
    cols = ["sim (= gap 0)"] + [f"gap {g:g}, look {e}" for g in (0.5, 1.0) for e in range(3)]
    args.out.mkdir(parents=True, exist_ok=True)
    labelled_grid(rows, labels, cols, left=190).save(args.out / "metaworld_looks.png",
                                                     optimize=True)
    print(f"wrote {args.out / 'metaworld_looks.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

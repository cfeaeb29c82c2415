"""Write docs/metaworld_shifts.png: one state of Meta-World in the sim look and in the real look
of every kind of shift (``shift=``) at gap 1.

Rows: button-press-topdown-v3 and assembly-v3, the first episode of the dataset of ``--seed``
at one step each, drawn by the corner camera at 96 x 128 (shown at twice the size). Columns:
the sim look, then real episode 0 of the seed at gap 1 in each kind of shift
(:data:`s2r.worlds.metaworld.look.SHIFTS`) -- the same state in every column.

Usage::

    python bench/make_metaworld_shifts.py [--seed 0] [--out docs]
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
GAP = 1.0


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
        groups += [(key, draw_textures(args.seed, GAP, kind), draw_look(args.seed, 0, kind), GAP,
                    snap) for kind in SHIFTS]
        frames = np.concatenate(shared_pool().paint(groups))
        rows.append(np.stack([np.asarray(Image.fromarray(f).resize((256, 192), Image.NEAREST))
                              for f in frames]))
        labels.append(f"{task.replace('-v3', '')}\nstep {step}")
    close_pool()
    cols = ["sim"] + [f"shift={kind}" for kind in SHIFTS]
    args.out.mkdir(parents=True, exist_ok=True)
    labelled_grid(rows, labels, cols, left=190).save(args.out / "metaworld_shifts.png",
                                                     optimize=True)
    print(f"wrote {args.out / 'metaworld_shifts.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

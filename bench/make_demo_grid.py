"""Write docs/demo_grid.png (and docs/demo_mask_overlay.png): what the demo dataset looks like.

Rows of the grid: sim, real at gap 0, real at gap 0.5, real at gap 1 -- the same states (a
paired render of one episode) at a few steps across the columns. The overlay shows the
task-relevant mask (arm, gripper, parts) in red over sim and real frames.

Usage::

    python bench/make_demo_grid.py [--seed 0] [--out docs] [--quick]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.worlds.demo.dataset import make_demo


def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:          # Pillow < 10.1: fixed-size bitmap font
        return ImageFont.load_default()


def labelled_grid(rows: list[np.ndarray], row_labels: list[str], col_labels: list[str],
                  *, pad: int = 4, left: int = 120, top: int = 24) -> Image.Image:
    """Tile ``rows`` (each ``(k, H, W, 3)`` uint8) with row labels left, column labels on top."""
    k, h, w = rows[0].shape[:3]
    canvas = Image.new("RGB", (left + k * (w + pad), top + len(rows) * (h + pad)), "white")
    draw = ImageDraw.Draw(canvas)
    font = _font(14)
    for c, text in enumerate(col_labels):
        draw.text((left + c * (w + pad) + w // 2, top // 2), text, fill="black", font=font,
                  anchor="mm")
    for r, (frames, text) in enumerate(zip(rows, row_labels)):
        y = top + r * (h + pad)
        draw.text((8, y + h // 2), text, fill="black", font=font, anchor="lm")
        for c, frame in enumerate(frames):
            canvas.paste(Image.fromarray(frame), (left + c * (w + pad), y))
    return canvas


def overlay(frames: np.ndarray, masks: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Tint mask pixels red: ``frames (k, H, W, 3)``, ``masks (k, H, W)`` -> uint8."""
    out = frames.astype(np.float32)
    m = masks.astype(bool)
    out[m] = (1 - alpha) * out[m] + alpha * np.array([255.0, 0.0, 0.0])
    return out.astype(np.uint8)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    parser.add_argument("--quick", action="store_true", help="small frames (96x128)")
    args = parser.parse_args(argv)
    h, w = (96, 128) if args.quick else (240, 320)
    steps = 40
    cols = [0, 9, 15, 21, 28, 35]
    sets = {g: make_demo(episodes=1, steps=steps, gap=g, seed=args.seed, paired=True,
                         height=h, width=w) for g in (0.0, 0.5, 1.0)}
    sim_idx = np.array(cols)
    real_idx = sim_idx + steps            # paired: real episode 1 replays sim episode 0
    rows = [sets[0.0].read_images(sim_idx)] + [sets[g].read_images(real_idx) for g in sets]
    labels = ["sim", "real, gap 0", "real, gap 0.5", "real, gap 1"]
    args.out.mkdir(parents=True, exist_ok=True)
    grid = labelled_grid(rows, labels, [f"step {c}" for c in cols])
    grid.save(args.out / "demo_grid.png", optimize=True)
    fs = sets[1.0]
    ov = [overlay(fs.read_images(sim_idx), fs.read_masks(sim_idx)),
          overlay(fs.read_images(real_idx), fs.read_masks(real_idx))]
    labelled_grid(ov, ["sim + mask", "real gap 1 + mask"], [f"step {c}" for c in cols]).save(
        args.out / "demo_mask_overlay.png", optimize=True)
    print(f"wrote {args.out / 'demo_grid.png'} and {args.out / 'demo_mask_overlay.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

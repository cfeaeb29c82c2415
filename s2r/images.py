"""Lazy image sources: read frames on demand, never the whole dataset at once.

An *image source* is any object with a ``shape`` attribute ``(N, H, W, 3)`` (or ``(N, H, W)``
for masks) and a ``read(indices)`` method returning ``uint8`` frames for an integer index
array. The FrameSet holds one; loaders pick the implementation (in-memory array, zarr array,
HDF5 dataset, list of image files).

A source may also define ``identity() -> bytes``: a cheap digest that changes whenever its
frames do (:mod:`s2r.identity`); the FrameSet fingerprint hashes it. Sources without one are
identified by hashing all their pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from s2r.errors import DataError
from s2r.identity import digest, files_identity, identity_of, pixels_identity


@runtime_checkable
class ImageSource(Protocol):
    """What a FrameSet needs from its images: a shape and random access by index."""

    shape: tuple

    def read(self, indices: np.ndarray) -> np.ndarray:
        """Return frames ``indices`` (1-D int array) as ``uint8`` of shape ``(n, H, W, 3)``."""
        ...


def as_indices(indices, n: int) -> np.ndarray:
    """Normalise an int, slice, list or array of frame indices to a 1-D ``int64`` array.

    Raises
    ------
    IndexError
        If any index is outside ``[-n, n)``.
    """
    if isinstance(indices, slice):
        return np.arange(n, dtype=np.int64)[indices]
    idx = np.asarray(indices)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean mask of shape {idx.shape} for {n} frames")
        return np.flatnonzero(idx).astype(np.int64)
    idx = np.atleast_1d(idx).astype(np.int64, copy=False)
    if idx.ndim != 1:
        raise IndexError(f"frame indices must be 1-D, got shape {idx.shape}")
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"frame index out of range for {n} frames: {idx.min()}..{idx.max()}")
    return np.where(idx < 0, idx + n, idx)


def check_frames(frames, where: str = "frames") -> None:
    """Check that ``frames`` is a batch of RGB frames as encoders take them.

    Parameters
    ----------
    frames : ndarray or Tensor of shape (B, H, W, 3), uint8
        Only ``shape`` and ``dtype`` are read (numpy or torch; nothing is copied).
    where : str
        What the frames are, for the message (``"saliency frames"``).

    Raises
    ------
    DataError
        When the shape is not ``(B, H, W, 3)`` or the dtype is not uint8.
    """
    shape = tuple(getattr(frames, "shape", ()))
    dtype = str(getattr(frames, "dtype", type(frames).__name__))
    if len(shape) != 4 or shape[3] != 3:
        raise DataError(f"{where} must be a uint8 batch of shape (B, H, W, 3), got shape {shape}")
    if dtype not in ("uint8", "torch.uint8"):
        raise DataError(f"{where} must be uint8 (0-255 RGB), got dtype {dtype}")


class ArrayImages:
    """Frames held by any array-like with numpy fancy indexing (ndarray, memmap, h5py).

    Parameters
    ----------
    array : array-like of shape (N, H, W, 3) or (N, H, W)
    sorted_reads : bool
        Read in increasing index order (h5py needs it; zarr prefers it).
    identity : bytes, optional
        What identifies the frames when they are cheaper to name than to hash (the demo: its
        parameters). By default the array's own ``identity()`` (lazy on-disk handles), else
        a hash of its bytes.
    """

    def __init__(self, array, *, sorted_reads: bool = False, identity: bytes | None = None):
        self.array = array
        self.shape = tuple(int(s) for s in array.shape)
        self._sorted_reads = sorted_reads
        self._identity = identity

    def identity(self) -> bytes:
        if self._identity is not None:
            return self._identity
        if isinstance(self.array, np.ndarray):
            return digest(repr(self.shape), str(self.array.dtype), self.array)
        own = getattr(self.array, "identity", None)
        return own() if callable(own) else pixels_identity(self)

    def read(self, indices: np.ndarray) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        if not self._sorted_reads:
            return np.asarray(self.array[idx])
        order = np.argsort(idx, kind="stable")
        uniq, inverse = np.unique(idx[order], return_inverse=True)
        block = np.asarray(self.array[uniq])
        out = np.empty((idx.size,) + block.shape[1:], dtype=block.dtype)
        out[order] = block[inverse]
        return out


class ConcatImages:
    """Several image sources end to end (e.g. the sim file's frames then the real file's)."""

    def __init__(self, parts: Sequence[ImageSource]):
        if not parts:
            raise ValueError("ConcatImages needs at least one part")
        tails = {tuple(p.shape[1:]) for p in parts}
        if len(tails) != 1:
            raise DataError(
                f"image shapes differ between sources: {sorted(tails)}; every domain must use "
                "the same frame size (H, W, 3)")
        self.parts = list(parts)
        self.offsets = np.cumsum([0] + [p.shape[0] for p in parts])
        self.shape = (int(self.offsets[-1]),) + tuple(parts[0].shape[1:])

    def identity(self) -> bytes:
        return digest("concat", *(identity_of(p) for p in self.parts))

    def read(self, indices: np.ndarray) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        which = np.searchsorted(self.offsets, idx, side="right") - 1
        for k, part in enumerate(self.parts):
            sel = np.flatnonzero(which == k)
            if sel.size:
                out[sel] = part.read(idx[sel] - self.offsets[k])
        return out


class SubsetImages:
    """A view of ``source`` restricted to ``indices`` (no copy of pixels)."""

    def __init__(self, source: ImageSource, indices: np.ndarray):
        self.source = source
        self.indices = as_indices(indices, source.shape[0])
        self.shape = (int(self.indices.size),) + tuple(source.shape[1:])

    def identity(self) -> bytes:
        return digest("subset", identity_of(self.source), self.indices)

    def read(self, indices: np.ndarray) -> np.ndarray:
        return self.source.read(self.indices[as_indices(indices, self.shape[0])])


#: The most pixels one frame may have: PIL's decompression-bomb threshold (``MAX_IMAGE_PIXELS``,
#: 89.5 Mpx; PIL itself refuses twice that). A frame is checked from its header, before decoding.
MAX_FRAME_PIXELS = 89_478_485


def pil_image():
    """``PIL.Image``, with its ``DecompressionBombWarning`` silenced: it fires exactly for the
    frames :func:`check_frame_pixels` refuses with a clear error (same threshold), so it would
    only add a second, foreign line (set once, process-wide: filters are global and
    ``catch_warnings`` is not thread-safe around decoding threads)."""
    import warnings

    from PIL import Image

    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
    return Image


def check_frame_pixels(im, where: str) -> None:
    """Refuse an opened PIL image whose header announces more than :data:`MAX_FRAME_PIXELS`
    (a 20000x20000 PNG of a few kB would take 1.2 GB decoded)."""
    width, height = im.size
    if width * height > MAX_FRAME_PIXELS:
        raise frame_too_large(where, f"{width}x{height} pixels")


def frame_too_large(where: str, size: str) -> DataError:
    """The error for a frame over :data:`MAX_FRAME_PIXELS` (``size`` as known)."""
    return DataError(f"{where}: the image is {size}, over the limit of {MAX_FRAME_PIXELS:,} "
                     "pixels per frame (PIL's decompression-bomb limit); resize the frames")


def bomb_size(exc: Exception) -> str:
    """What PIL's ``DecompressionBombError`` says of the image's size."""
    import re

    found = re.search(r"\((\d+) pixels\)", str(exc))
    return f"{int(found.group(1)):,} pixels" if found else "too large"


def to_rgb_array(im) -> np.ndarray:
    """A decoded PIL image as ``uint8 (H, W, 3)``. A palette with byte transparency
    (pngquant's output) goes through RGBA, as PIL asks (its direct RGB conversion warns)."""
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    return np.asarray(im.convert("RGB"), dtype=np.uint8)


def decode_image_file(path: Path, *, expected_hw: tuple | None = None) -> np.ndarray:
    """Decode one PNG/JPEG file to ``uint8 (H, W, 3)``, with errors that name the file."""
    from PIL import UnidentifiedImageError

    Image = pil_image()

    try:
        with Image.open(path) as im:
            check_frame_pixels(im, str(path))
            im.load()
            if im.mode not in ("RGB", "L", "RGBA", "P"):
                raise DataError(f"{path}: image mode {im.mode!r} is not 8-bit RGB")
            arr = to_rgb_array(im)
    except FileNotFoundError:
        raise DataError(f"{path}: image file does not exist") from None
    except Image.DecompressionBombError as exc:  # PIL refuses twice its limit at open()
        raise frame_too_large(str(path), bomb_size(exc)) from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        from s2r.lfs import check_not_lfs_pointer

        check_not_lfs_pointer(path)
        raise DataError(f"{path}: unreadable or truncated image file ({exc})") from None
    if expected_hw is not None and arr.shape[:2] != tuple(expected_hw):
        raise DataError(
            f"{path}: image is {arr.shape[0]}x{arr.shape[1]}, expected "
            f"{expected_hw[0]}x{expected_hw[1]} like the other frames")
    return arr


class FileImages:
    """Frames stored one file each (PNG/JPEG), decoded on demand.

    Parameters
    ----------
    paths : sequence of path
    frame_shape : tuple
        ``(H, W, 3)`` of every frame.
    root : path, optional
        The dataset folder: the identity names files relative to it, so moving the folder
        keeps it.
    """

    def __init__(self, paths: Sequence[Path], frame_shape: tuple, *, root=None):
        self.paths = [Path(p) for p in paths]
        self.shape = (len(self.paths),) + tuple(int(s) for s in frame_shape)
        self.root = None if root is None else Path(root)

    def identity(self) -> bytes:
        """Names, sizes and times of the files (see :mod:`s2r.identity`)."""
        return files_identity(self.paths, self.root)

    def read(self, indices: np.ndarray) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        for j, i in enumerate(idx):
            out[j] = decode_image_file(self.paths[i], expected_hw=self.shape[1:3])
        return out

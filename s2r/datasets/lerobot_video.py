"""Image sources of LeRobot datasets: frames in MP4 videos (PyAV) or PNG bytes in parquet.

Both read lazily and keep the FrameSet picklable (the copy reopens its files when first read):

- :class:`VideoFrames`: frame ``i`` is the frame shown at ``times[i]`` seconds of video file
  ``files[file_of[i]]``. Reads decode in storage (time) order with the decoder of each file
  kept open between reads, so walking a dataset in order decodes every frame once and seeks
  only when a read jumps backwards or far ahead.
- :class:`ParquetImages`: frame ``i`` is row ``row_of[i]`` of parquet file
  ``files[file_of[i]]``, an ``{"bytes": PNG, "path": ...}`` struct (LeRobot's image mode);
  row groups are read whole through a small byte-bounded LRU.

``identity()`` of both digests the size and times of the parquet and video files
(:func:`s2r.identity.files_identity`), so the dataset fingerprint changes with any of them.
"""

from __future__ import annotations

import io
import os
import threading
from collections import OrderedDict
from fractions import Fraction
from typing import Sequence

import numpy as np

from s2r.lfs import check_not_lfs_pointer
from s2r.errors import DataError
from s2r.identity import digest, files_identity
from s2r.images import (as_indices, bomb_size, check_frame_pixels, frame_too_large,
                        pil_image, to_rgb_array)

#: Decoders kept open at once (one per video file).
MAX_OPEN_VIDEOS = 8
#: A read continues decoding forward, without a seek, over at most this many skipped frames.
FORWARD_FRAMES = 16
DEFAULT_CACHE_BYTES = 256 * 2**20


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else 'no message'}"


def probe_video(path: str) -> dict:
    """Open a video's header: ``{"height", "width", "end"}`` (end time in seconds or None).

    Raises
    ------
    DataError
        The file is missing, not a video (truncated MP4s lose their index), or has no
        video stream.
    """
    import av

    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO or device would block
        raise DataError(f"{path}: not a regular file; expected an MP4 video as LeRobot writes")
    try:
        with av.open(path) as container:
            if not container.streams.video:
                raise DataError(f"{path}: no video stream; expected an MP4 video as LeRobot writes")
            s = container.streams.video[0]
            end = None
            if s.duration is not None and s.time_base is not None:
                end = float((s.duration + (s.start_time or 0)) * s.time_base)
            return {"height": int(s.codec_context.height), "width": int(s.codec_context.width),
                    "end": end}
    except FileNotFoundError:
        raise DataError(f"{path}: video file does not exist") from None
    except DataError:
        raise
    except Exception as exc:  # av.error.* (InvalidDataError for a truncated MP4), OSError
        check_not_lfs_pointer(path)
        raise DataError(f"{path}: not a readable video ({_first_line(exc)}); the file is "
                        "corrupt or truncated: download or copy it again") from None


class _Decoder:
    """One open video file, decoding forward from the last position."""

    def __init__(self, path: str, tol: float):
        import av

        self.path, self.tol = path, tol
        try:
            self.container = av.open(path)
            self.stream = self.container.streams.video[0]
        except Exception as exc:
            check_not_lfs_pointer(path)
            raise DataError(f"{path}: not a readable video ({_first_line(exc)}); the file is "
                            "corrupt or truncated: download or copy it again") from None
        self.stream.thread_type = "AUTO"
        rate = self.stream.average_rate or self.stream.guessed_rate
        self.period = float(1 / rate) if rate else 2 * tol
        self.frames = None
        self.last_time = None      # time of the last decoded frame
        self.last_image = None     # its pixels when they were converted

    def close(self) -> None:
        try:
            self.container.close()
        except Exception:
            pass

    def _seek(self, t: float) -> None:
        tb = self.stream.time_base
        target = max(0.0, t - self.tol)
        # times are pts * time_base (as LeRobot's decoders compare them), so no start offset
        offset = int(Fraction(target).limit_denominator(10**6) / tb)
        self.container.seek(offset, stream=self.stream, backward=True, any_frame=False)
        self.frames = self.container.decode(self.stream)
        self.last_time, self.last_image = None, None

    def _error(self, t: float, what: str) -> DataError:
        return DataError(f"{self.path}: {what} while looking for the frame at {t:.3f} s; the video "
                         "is corrupt or truncated (or the parquet timestamps do not match it)")

    def frame_at(self, t: float) -> np.ndarray:
        """RGB pixels of the frame shown at ``t`` seconds (within half a frame)."""
        tol = self.tol
        if self.last_time is not None and abs(self.last_time - t) <= tol:
            if self.last_image is not None:
                return self.last_image
            self._seek(t)
        elif (self.frames is None or self.last_time is None or t < self.last_time
              or t - self.last_time > FORWARD_FRAMES * self.period):
            self._seek(t)
        while True:
            try:
                frame = next(self.frames)
            except StopIteration:
                end = ("no frame" if self.last_time is None
                       else f"the last is at {self.last_time:.3f} s")
                self.frames = None
                raise self._error(t, f"the video ends ({end})") from None
            except Exception as exc:  # av.error.InvalidDataError and friends
                self.frames = None
                raise self._error(t, f"cannot decode ({_first_line(exc)})") from None
            ft = float(frame.time) if frame.time is not None else None
            if ft is None:
                continue
            self.last_time, self.last_image = ft, None
            if ft < t - tol:
                continue
            if ft > t + tol:
                raise self._error(t, f"no frame there (the next is at {ft:.3f} s)")
            self.last_image = frame.to_ndarray(format="rgb24")
            return self.last_image


class VideoFrames:
    """Frames of MP4 videos at given times (see the module docstring).

    Parameters
    ----------
    files : sequence of str
        Video files.
    file_of : ndarray of shape (N,), int
        Index into ``files`` per frame.
    times : ndarray of shape (N,), float
        Time in seconds of each frame inside its file (LeRobot: ``from_timestamp +
        timestamp``).
    frame_shape : tuple
        ``(H, W, 3)``.
    fps : float
        Frames per second: a frame matches a time within half a period.
    identity_files : sequence of str
        Files whose stat identifies the frames (the parquet files and the videos).
    root : path, optional
        Names in the identity are relative to it.
    """

    def __init__(self, files: Sequence[str], file_of, times, frame_shape: tuple, *, fps: float,
                 identity_files: Sequence[str] = (), root=None):
        self.files = [str(f) for f in files]
        self.file_of = np.asarray(file_of, dtype=np.int64)
        self.times = np.asarray(times, dtype=np.float64)
        self.shape = (int(self.file_of.size),) + tuple(int(s) for s in frame_shape)
        self.tol = 0.5 / float(fps)
        self.identity_files = [str(f) for f in identity_files] or list(self.files)
        self.root = None if root is None else str(root)
        self._init_state()

    def _init_state(self) -> None:
        self._open: OrderedDict[int, _Decoder] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_open"], state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_state()

    def identity(self) -> bytes:
        return digest("lerobot-video", repr(self.shape), self.file_of, self.times,
                      files_identity(self.identity_files, self.root))

    def close(self) -> None:
        with self._lock:
            for dec in self._open.values():
                dec.close()
            self._open.clear()

    def _decoder(self, k: int) -> _Decoder:
        dec = self._open.get(k)
        if dec is None:
            dec = _Decoder(self.files[k], self.tol)
            self._open[k] = dec
            while len(self._open) > MAX_OPEN_VIDEOS:
                self._open.popitem(last=False)[1].close()
        self._open.move_to_end(k)
        return dec

    def read(self, indices) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        if idx.size == 0:
            return out
        files = self.file_of[idx]
        with self._lock:
            for k in np.unique(files):
                sel = np.flatnonzero(files == k)
                ts = self.times[idx[sel]]
                order = np.argsort(ts, kind="stable")
                dec = self._decoder(int(k))
                try:
                    for j in order:
                        image = dec.frame_at(float(ts[j]))
                        if image.shape != self.shape[1:]:
                            raise DataError(
                                f"{dec.path}: frame at {ts[j]:.3f} s is {image.shape[0]}x"
                                f"{image.shape[1]}, expected {self.shape[1]}x{self.shape[2]}")
                        out[sel[j]] = image
                except DataError:
                    self._open.pop(int(k), None)
                    dec.close()
                    raise
        return out


def decode_png(data, where: str) -> np.ndarray:
    """PNG/JPEG bytes to ``uint8 (H, W, 3)``; a bad stream raises :class:`DataError`."""
    from PIL import UnidentifiedImageError

    Image = pil_image()

    try:
        with Image.open(io.BytesIO(data)) as im:
            check_frame_pixels(im, where)
            im.load()
            return to_rgb_array(im)
    except Image.DecompressionBombError as exc:
        raise frame_too_large(where, bomb_size(exc)) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise DataError(f"{where}: unreadable or truncated image bytes ({exc})") from None


def image_bytes_column(column, where: str):
    """The PNG bytes of an image column (``struct<bytes, path>`` or plain binary) as a list."""
    import pyarrow as pa

    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    if pa.types.is_struct(column.type):
        names = [column.type.field(i).name for i in range(column.type.num_fields)]
        if "bytes" not in names:
            raise DataError(f"{where}: image struct has fields {names}; expected 'bytes'")
        column = column.field("bytes")
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        raise DataError(f"{where}: image column has type {column.type}; expected PNG bytes "
                        "(struct<bytes, path>)")
    return column.to_pylist()


class ParquetImages:
    """Images stored as PNG bytes in parquet files (see the module docstring).

    Parameters
    ----------
    files : sequence of str
        Parquet files.
    file_of, row_of : ndarray of shape (N,), int
        File and row inside it of each frame.
    column : str
        The image column (``observation.images.cam``).
    frame_shape : tuple
        ``(H, W, 3)``.
    root : path, optional
        Names in the identity are relative to it.
    cache_bytes : int
        Most bytes of row-group image columns kept between reads (at least one is kept).
    """

    def __init__(self, files: Sequence[str], file_of, row_of, column: str, frame_shape: tuple, *,
                 root=None, cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.files = [str(f) for f in files]
        self.file_of = np.asarray(file_of, dtype=np.int64)
        self.row_of = np.asarray(row_of, dtype=np.int64)
        self.column = column
        self.shape = (int(self.file_of.size),) + tuple(int(s) for s in frame_shape)
        self.root = None if root is None else str(root)
        self.cache_bytes = int(cache_bytes)
        self._init_state()

    def _init_state(self) -> None:
        self._groups: dict = {}  # file index -> row-group start offsets
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_groups"], state["_cache"], state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_state()

    def identity(self) -> bytes:
        return digest("lerobot-parquet-images", repr(self.shape), self.column, self.file_of,
                      self.row_of, files_identity(self.files, self.root))

    def _parquet(self, k: int):
        import pyarrow.parquet as pq

        path = self.files[k]
        try:
            return pq.ParquetFile(path)
        except FileNotFoundError:
            raise DataError(f"{path}: parquet file does not exist") from None
        except Exception as exc:
            check_not_lfs_pointer(path)
            raise DataError(f"{path}: not a readable parquet file ({_first_line(exc)})") from None

    def _starts(self, k: int) -> np.ndarray:
        if k not in self._groups:
            meta = self._parquet(k).metadata
            sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
            self._groups[k] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return self._groups[k]

    def _group(self, k: int, g: int) -> list:
        key = (k, g)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key][0]
        path = self.files[k]
        try:
            table = self._parquet(k).read_row_group(g, columns=[self.column])
        except DataError:
            raise
        except Exception as exc:
            raise DataError(f"{path}: cannot read row group {g} of column {self.column!r} "
                            f"({_first_line(exc)}); the file is corrupt") from None
        values = image_bytes_column(table.column(0), f"{path}[{self.column}]")
        size = sum(len(v) for v in values if v is not None)
        self._cache[key] = (values, size)
        total = sum(s for _, s in self._cache.values())
        while len(self._cache) > 1 and total > self.cache_bytes:
            total -= self._cache.popitem(last=False)[1][1]
        return values

    def read(self, indices) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        with self._lock:
            files = self.file_of[idx]
            for k in np.unique(files):
                k = int(k)
                sel = np.flatnonzero(files == k)
                rows = self.row_of[idx[sel]]
                starts = self._starts(k)
                group = np.searchsorted(starts, rows, side="right") - 1
                for g in np.unique(group):
                    values = self._group(k, int(g))
                    for j in np.flatnonzero(group == g):
                        row = int(rows[j])
                        where = f"{self.files[k]}[{self.column}] row {row}"
                        data = values[row - int(starts[g])]
                        if data is None:
                            raise DataError(f"{where}: no image bytes (only a path); expected "
                                            "PNG bytes inside the parquet")
                        image = decode_png(data, where)
                        if image.shape != self.shape[1:]:
                            raise DataError(f"{where}: image is {image.shape[0]}x{image.shape[1]}"
                                            f", expected {self.shape[1]}x{self.shape[2]}")
                        out[sel[j]] = image
        return out

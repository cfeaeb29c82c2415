"""LeRobot datasets on the Hugging Face hub: ``hf:ORG/NAME[@REVISION]``.

Online, ``huggingface_hub`` downloads ``meta/`` first, then the parquet files and only the
chosen camera's videos, into its usual cache (``HF_HUB_CACHE``, default
``~/.cache/huggingface/hub``); offline (``HF_HUB_OFFLINE=1``, or no network) the dataset is
found in that cache (``datasets--ORG--NAME/snapshots/<revision>/...``, ``refs/main``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Optional

from s2r.errors import DataError
from s2r.settings import need

HUB_PREFIX = "hf:"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def is_hub_id(text) -> bool:
    return isinstance(text, str) and text.startswith(HUB_PREFIX)


def hub_repo(text: str) -> tuple[str, Optional[str]]:
    """``"hf:ORG/NAME[@REVISION]"`` -> ``("ORG/NAME", REVISION or None)``; checks the form."""
    repo, _, revision = text[len(HUB_PREFIX):].partition("@")
    if not _HUB_ID.match(repo) or (_ and not revision) or ".." in revision.split("/") \
            or revision.startswith("/"):
        raise DataError(f"{text!r}: a hub dataset is hf:ORG/NAME (optionally @REVISION), e.g. "
                        "hf:lerobot/aloha_sim_insertion_human")
    return repo, revision or None


def hub_snapshot(text: str, *, settings, image_key: Optional[str] = None,
                 download: bool = True, first_camera: Optional[Callable] = None) -> Path:
    """The local folder of hub dataset ``hf:ORG/NAME``: found in the hub cache
    (``settings.hf_hub_cache``: ``HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``)
    offline, or downloaded into it through ``huggingface_hub`` (``meta/`` first, then the data
    and only the videos of ``image_key``, else of ``first_camera(meta folder's root)``) when
    online and ``download`` is true and ``settings.hf_offline`` (``HF_HUB_OFFLINE``) is off.

    Parameters
    ----------
    settings : s2r.settings.Settings
        Where the hub cache is and whether s2r is offline (:func:`s2r.settings.current`).

    Raises
    ------
    DataError
        A malformed id, or a dataset neither in the cache nor downloadable.
    """
    repo, revision = hub_repo(text)
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - a dependency of s2r
        raise DataError(f"{text}: hub datasets need the huggingface_hub package") from None
    settings = need(settings, f"hub dataset {text} (the hub cache, offline mode)")
    offline = settings.hf_offline
    cache = str(settings.hf_hub_cache) if settings.hf_hub_cache_set else None

    def get(patterns, local_only):
        return _inside_snapshots(text, repo, Path(snapshot_download(
            repo, repo_type="dataset", revision=revision, cache_dir=cache,
            allow_patterns=patterns, local_files_only=local_only)))

    where = cache or "the hub cache"
    if download and not offline:
        try:
            root = get(["meta/*"], False)
            camera = image_key or (first_camera(root) if first_camera else None)
            videos = [f"videos/{camera}/*", f"videos/*/{camera}/*"] if camera else ["videos/*"]
            return get(["meta/*", "data/*", *videos], False)
        except DataError:
            raise
        except Exception as exc:  # no network, unknown repo, ...: fall back on the cache
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    else:
        reason = "offline (HF_HUB_OFFLINE)" if offline else "download disabled"
    try:
        return get(None, True)
    except DataError:
        raise
    except Exception:
        raise DataError(f"{text}: dataset {repo!r} is not in {where} and cannot be downloaded "
                        f"({reason}); download it once online, or give its folder") from None


def _inside_snapshots(text: str, repo: str, path: Path) -> Path:
    """``path`` if it is ``.../datasets--ORG--NAME/snapshots/<one name>``: the hub cache's
    ``refs/<revision>`` file names the snapshot, and a planted ref (``../../..``) must not
    send s2r to read a folder elsewhere."""
    folder = "datasets--" + repo.replace("/", "--")
    if ".." in path.parts or path.parent.name != "snapshots" \
            or path.parent.parent.name != folder:
        raise DataError(f"{text}: the hub cache resolves it to {str(path)!r}, not a snapshot "
                        f"folder of {folder}; its refs/ file is damaged (delete {folder} from "
                        "the hub cache and download it again)")
    return path


def local_root(path, *, settings=None, image_key: Optional[str] = None,
               download: bool = True, first_camera: Optional[Callable] = None) -> Path:
    """The folder of a LeRobot dataset given as a folder or as ``hf:ORG/NAME`` (the latter
    needs ``settings``, see :func:`hub_snapshot`)."""
    if is_hub_id(str(path)):
        return hub_snapshot(str(path), settings=settings, image_key=image_key,
                            download=download, first_camera=first_camera)
    return Path(path)

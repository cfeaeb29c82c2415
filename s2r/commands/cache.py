"""``python -m s2r cache ls|clear [--json]``: what the disk cache holds, and emptying it."""

from __future__ import annotations

import json
import time

from s2r.cli import add_cache_dir_arg, add_command


def register(subparsers):
    p = add_command(
        subparsers, "cache", help="list (ls) or delete (clear) cached embeddings and results",
        description="List or delete the entries of the s2r disk cache ($S2R_CACHE_DIR, else "
                    "./cache): embeddings keyed by dataset fingerprint, encoder, weights and "
                    "preprocessing version, plus small results.")
    p.add_argument("action", choices=("ls", "clear"), help="ls: list entries; clear: delete all")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_cache_dir_arg(p)
    p.set_defaults(func=run)


def human_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KB"`` (powers of 1024, one decimal)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _table(entries) -> list[str]:
    header = ("HASH", "KIND", "DATASET", "ENCODER", "SHAPE", "SIZE", "CREATED", "OTHER KEYS")
    rows = [header]
    for e in entries:
        other = {k: v for k, v in e.key.items() if k not in ("kind", "frameset", "encoder")}
        rows.append((
            e.hash[:12], e.kind, str(e.key.get("frameset", "-")), str(e.key.get("encoder", "-")),
            "x".join(map(str, e.shape)) if e.shape is not None else "json",
            human_bytes(e.size_bytes),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created)),
            " ".join(f"{k}={v}" for k, v in sorted(other.items())) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def _moved_aside_note(paths) -> str:
    """One line about damaged indexes kept in the cache folder ("" when there are none)."""
    if not paths:
        return ""
    names = ", ".join(p.name for p in paths)
    return (f"note: {len(paths)} damaged index folder(s) moved aside and kept in "
            f"{paths[0].parent}: {names} (delete them when no longer needed)")


def run(args) -> int:
    from s2r.cache import Cache
    from s2r.cli import cache_dir_from_args

    cache = Cache(cache_dir_from_args(args))  # not a folder: fails here, at once
    if args.action == "ls":
        entries = cache.ls()
        total = cache.size_bytes()
        moved = cache.moved_aside()
        if args.json:
            print(json.dumps({"root": str(cache.root), "size_bytes": total,
                              "entries": [e.to_dict() for e in entries],
                              "moved_aside": [str(p) for p in moved]}, indent=2))
            return 0
        if entries:
            print("\n".join(_table(entries)))
        print(f"{len(entries)} entries, {human_bytes(total)} on disk in {cache.root}")
        if moved:
            print(_moved_aside_note(moved))
        return 0
    before = cache.size_bytes()
    removed = cache.clear()
    freed = max(0, before - cache.size_bytes())
    moved = cache.moved_aside()
    if args.json:
        print(json.dumps({"root": str(cache.root), "removed": removed, "freed_bytes": freed,
                          "moved_aside": [str(p) for p in moved]}))
    else:
        print(f"removed {removed} entries ({human_bytes(freed)}) from {cache.root}")
        if moved:
            print(_moved_aside_note(moved))
    return 0

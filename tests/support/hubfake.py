"""A Hugging Face Hub cache built by hand (the layout ``snapshot_download`` reads offline)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_hf_cache(cache: Path, repo_id: str, files: dict[str, bytes], commit: str = COMMIT,
                  ref: str | None = "main") -> Path:
    """``datasets--ORG--NAME/{blobs,snapshots/<commit>,refs/<ref>}`` with every snapshot file a
    relative symlink to its blob, as the Hub library writes it. Returns the snapshot folder."""
    storage = cache / f"datasets--{repo_id.replace('/', '--')}"
    snap = storage / "snapshots" / commit
    (storage / "blobs").mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        blob = storage / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref:
        (storage / "refs").mkdir(exist_ok=True)
        (storage / "refs" / ref).write_text(commit)
    return snap


def dataset_files(root: Path) -> dict[str, bytes]:
    """Every file of a dataset folder, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

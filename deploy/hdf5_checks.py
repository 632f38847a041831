"""What an HDF5 file the program reads may hold: its own groups and datasets, of a bounded
decompressed size. Run files (:mod:`deploy.runfile`) and NIR files (:mod:`deploy.nir_import`)
are both HDF5, and HDF5 can make a reader open another file (external and soft links,
external raw storage that may point at ``/etc/passwd``, virtual datasets) or allocate
without bound (a small gzip-compressed or never-written chunked dataset that is gigabytes
once read); each is refused before any dataset is read."""
from __future__ import annotations

import h5py
import numpy as np

MAX_DECOMPRESSED_FLOOR = 256 * 2**20
MAX_DECOMPRESSION_RATIO = 100
"""The logical size of all datasets together is capped at the larger of the floor and this
multiple of the file's own size."""


def check_structure(f: h5py.File, where: str, kind: str, file_bytes: int, error) -> None:
    """Raise ``error`` (an exception class, one line starting with ``where``) for a link
    that is not a hard link, a virtual dataset, a dataset with external raw storage, or
    more decompressed bytes than ``max(MAX_DECOMPRESSED_FLOOR, MAX_DECOMPRESSION_RATIO x
    file_bytes)``. ``kind`` names the files in the message ("run files"). Nothing is
    followed or read: links are inspected with ``getlink=True``, datasets by their
    metadata."""
    limit = max(MAX_DECOMPRESSED_FLOOR, MAX_DECOMPRESSION_RATIO * file_bytes)
    total = 0
    pending = [("", f)]
    while pending:                      # iterative: a deep hostile tree is no RecursionError
        prefix, group = pending.pop()
        for key in group:
            name = f"{prefix}/{key}"
            link = group.get(key, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise error(f"{where}: {name} is a {type(link).__name__}; {kind} hold only "
                            "their own groups and datasets (links are not followed)")
            obj = group[key]
            if isinstance(obj, h5py.Group):
                pending.append((name, obj))
                continue
            if not isinstance(obj, h5py.Dataset):
                raise error(f"{where}: {name} is neither a group nor a dataset")
            if obj.is_virtual:
                raise error(f"{where}: dataset {name} is a virtual dataset (its data lives "
                            f"in other files); {kind} hold their own data")
            if obj.id.get_create_plist().get_external_count():
                raise error(f"{where}: dataset {name} uses external raw storage (its data "
                            f"lives in another file); {kind} hold their own data")
            total += int(np.prod(obj.shape, dtype=np.float64) if obj.shape else 1) \
                * obj.dtype.itemsize
            if total > limit:
                raise error(
                    f"{where}: its datasets hold over {total / 2**20:.0f} MiB once "
                    f"decompressed ({name} and those before it); the limit is "
                    f"{limit / 2**20:.0f} MiB (the larger of {MAX_DECOMPRESSED_FLOOR // 2**20} "
                    f"MiB and {MAX_DECOMPRESSION_RATIO}x the file's size)")

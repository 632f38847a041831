"""What an HDF5 file the program reads may hold: its own groups and datasets, each reached
by one path, of a bounded number, depth and decompressed size, with no filter HDF5 would
load a plugin library for. Run files (:mod:`deploy.runfile`) and NIR files
(:mod:`deploy.nir_import`) are both HDF5, and HDF5 can make a reader open another file
(external and soft links, external raw storage that may point at ``/etc/passwd``, virtual
datasets), load a shared library (a filter id it does not know, looked up in
``HDF5_PLUGIN_PATH``), walk without end (a group hard-linked into itself) or allocate without
bound (a small gzip-compressed or never-written chunked dataset that is gigabytes once read);
each is refused before any dataset is read."""
from __future__ import annotations

import h5py
import numpy as np

MAX_DECOMPRESSED_FLOOR = 256 * 2**20
MAX_DECOMPRESSION_RATIO = 100
"""The logical size of all datasets together is capped at the larger of the floor and this
multiple of the file's own size."""
MAX_OBJECTS = 100_000
"""The most groups and datasets (links to them) a file may hold: a run file holds tens to a
few thousand (one dataset per trace and trained array)."""
MAX_DEPTH = 32
"""The deepest a group or dataset may be nested (``/trained/arrays/param/fc1.weight`` is 4)."""
ALLOWED_FILTERS = {h5py.h5z.FILTER_DEFLATE: "gzip", h5py.h5z.FILTER_SHUFFLE: "shuffle",
                   h5py.h5z.FILTER_FLETCHER32: "fletcher32"}
"""The HDF5 filters a dataset may use: built into HDF5, and all that neuroedge writes (gzip)
or nir writes by default. Any other id would make HDF5 search its plugin folder and load the
shared libraries there."""


def no_plugins() -> None:
    """Empty HDF5's plugin search path for this process (h5py exposes no switch for plugin
    loading; with no folder to search, no filter plugin is ever loaded). Called before a
    file from outside is read; neuroedge uses no plugin filter."""
    while h5py.h5pl.size():
        h5py.h5pl.remove(0)


def _short(name: str) -> str:
    return name if len(name) <= 80 else f"{name[:60]}...{name[-16:]}"


def check_structure(f: h5py.File, where: str, kind: str, file_bytes: int, error) -> None:
    """Raise ``error`` (an exception class, one line starting with ``where``) for a link
    that is not a hard link, a group reached by a second hard link (a cycle back to a group
    that holds it, or a DAG that makes a walk exponential), more than :data:`MAX_OBJECTS`
    objects or nesting deeper than :data:`MAX_DEPTH`, a virtual dataset, a dataset with
    external raw storage or a filter not in :data:`ALLOWED_FILTERS`, or more decompressed
    bytes than ``max(MAX_DECOMPRESSED_FLOOR, MAX_DECOMPRESSION_RATIO x file_bytes)``.
    ``kind`` names the files in the message ("run files"). Nothing is followed or read:
    links are inspected with ``getlink=True``, datasets by their metadata, and HDF5's plugin
    search path is emptied first (:func:`no_plugins`)."""
    no_plugins()
    limit = max(MAX_DECOMPRESSED_FLOOR, MAX_DECOMPRESSION_RATIO * file_bytes)
    total, count = 0, 0
    groups = {h5py.h5o.get_info(f.id).addr: "/"}   # address -> the path it was reached by
    pending = [("", f, 0)]
    while pending:                      # iterative: a deep hostile tree is no RecursionError
        prefix, group, depth = pending.pop()
        for key in group:
            name = f"{prefix}/{key}"
            count += 1
            if count > MAX_OBJECTS:
                raise error(f"{where}: it holds over {MAX_OBJECTS:,} groups and datasets "
                            f"(at {_short(name)}); {kind} hold at most {MAX_OBJECTS:,}")
            if depth >= MAX_DEPTH:
                raise error(f"{where}: {_short(name)} is nested over {MAX_DEPTH} groups "
                            f"deep; {kind} nest groups at most {MAX_DEPTH} deep")
            link = group.get(key, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise error(f"{where}: {name} is a {type(link).__name__}; {kind} hold only "
                            "their own groups and datasets (links are not followed)")
            obj = group[key]
            if isinstance(obj, h5py.Group):
                addr = h5py.h5o.get_info(obj.id).addr
                first = groups.get(addr)
                if first is not None:
                    what = (f"a hard link back to {'the root /' if first == '/' else _short(first)}"
                            ", a group that holds it (a cycle)"
                            if first == "/" or name.startswith(first + "/") else
                            f"a second hard link to the group {_short(first)}")
                    raise error(f"{where}: {_short(name)} is {what}; expected a tree, each "
                                f"group reached by one path ({kind} are written so)")
                groups[addr] = name
                pending.append((name, obj, depth + 1))
                continue
            if not isinstance(obj, h5py.Dataset):
                raise error(f"{where}: {name} is neither a group nor a dataset")
            if obj.is_virtual:
                raise error(f"{where}: dataset {name} is a virtual dataset (its data lives "
                            f"in other files); {kind} hold their own data")
            plist = obj.id.get_create_plist()
            if plist.get_external_count():
                raise error(f"{where}: dataset {name} uses external raw storage (its data "
                            f"lives in another file); {kind} hold their own data")
            for i in range(plist.get_nfilters()):
                code = plist.get_filter(i)[0]
                if code not in ALLOWED_FILTERS:
                    allowed = ", ".join(f"{n} ({c})" for c, n in ALLOWED_FILTERS.items())
                    raise error(f"{where}: dataset {_short(name)} uses HDF5 filter {code}, "
                                "which HDF5 would look for as a plugin library (not read); "
                                f"{kind} use only the filters {allowed}")
            total += int(np.prod(obj.shape, dtype=np.float64) if obj.shape else 1) \
                * obj.dtype.itemsize
            if total > limit:
                raise error(
                    f"{where}: its datasets hold over {total / 2**20:.0f} MiB once "
                    f"decompressed ({name} and those before it); the limit is "
                    f"{limit / 2**20:.0f} MiB (the larger of {MAX_DECOMPRESSED_FLOOR // 2**20} "
                    f"MiB and {MAX_DECOMPRESSION_RATIO}x the file's size)")

"""Half-precision storage of embedding matrices: float16 in memory, float32 arithmetic.

At 10x val2014 (2,025,200 captions, 512-d) a float32 caption matrix is 4.1 GB; stored as
float16 it is 2.1 GB. Rows are scaled to unit length before the cast (cosine rankings do
not depend on length, and float16 overflows above 65,504), a chunk at a time, so the file's
matrix is never held whole in its own precision.
"""

from __future__ import annotations

import zipfile

import numpy as np

from pipeline.errors import InputError

FLOAT32 = "float32"
FLOAT16 = "float16"
STORAGES = (FLOAT32, FLOAT16)

# Rows converted at once: 16,384 x 512 float64 is 64 MiB, small next to the float16 matrix.
_CHUNK_ELEMENTS = 1 << 23


def check_storage(storage: str, *, field: str = "storage") -> str:
    """``storage`` if it is one of STORAGES, else an InputError naming ``field``."""
    if storage not in STORAGES:
        raise InputError(f"must be one of {', '.join(STORAGES)}, got {storage!r}", field=field)
    return storage


def chunk_rows(width: int) -> int:
    """Rows per conversion chunk for a matrix ``width`` columns wide."""
    return max(1, _CHUNK_ELEMENTS // max(1, width))


def unit_rows_into(chunk: np.ndarray, out: np.ndarray) -> None:
    """Write ``chunk``'s rows scaled to unit L2 norm into ``out`` (any float dtype).

    Zero rows stay zero; a row holding NaN or infinity becomes NaN, so a later finiteness
    check still finds (and names) it.
    """
    wide = chunk.astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", wide, wide))
    scale = np.zeros_like(norms)
    np.divide(1.0, norms, out=scale, where=norms > 0)
    scale[~np.isfinite(norms)] = np.nan
    wide *= scale[:, None]
    out[...] = wide


def unit_float16(matrix: np.ndarray) -> np.ndarray:
    """A float16 copy of ``matrix`` with unit rows, converted a chunk of rows at a time."""
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise InputError(f"must be a 2-D array, got shape {matrix.shape}", field="embeddings")
    out = np.empty(matrix.shape, dtype=np.float16)
    rows = chunk_rows(matrix.shape[1])
    for first in range(0, matrix.shape[0], rows):
        unit_rows_into(matrix[first : first + rows], out[first : first + rows])
    return out


def read_npz_float16(archive: zipfile.ZipFile, name: str, *, file: str) -> np.ndarray:
    """Member ``name`` of an ``.npz`` as float16 unit rows, read a chunk of rows at a time.

    The member must be a 2-D numeric array; other shapes and dtypes, and Fortran order, are
    read whole (the later checks then report them as they do for float32 storage).
    """
    member = f"{name}.npy"
    with archive.open(member) as stream:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        numeric = np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)
        if len(shape) != 2 or fortran or not numeric or dtype.hasobject:
            return _read_whole(archive, member, file)
        n, width = shape
        out = np.empty(shape, dtype=np.float16)
        rows = chunk_rows(width)
        for first in range(0, n, rows):
            count = min(rows, n - first)
            raw = stream.read(count * width * dtype.itemsize)
            if len(raw) != count * width * dtype.itemsize:
                raise InputError("array data ends early", file=file, record=first, field=name)
            chunk = np.frombuffer(raw, dtype=dtype).reshape(count, width)
            unit_rows_into(chunk, out[first : first + count])
    return out


def _read_whole(archive: zipfile.ZipFile, member: str, file: str) -> np.ndarray:
    with archive.open(member) as stream:
        try:
            array: np.ndarray = np.lib.format.read_array(stream, allow_pickle=False)
        except ValueError as exc:
            raise InputError(f"cannot read an array: {exc}", file=file, field=member) from None
    return array

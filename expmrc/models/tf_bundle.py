"""Reading TensorFlow checkpoints (the V2 "tensor bundle" format) without TensorFlow.

A checkpoint `PREFIX` is `PREFIX.index` plus data shards `PREFIX.data-00000-of-0000N`. The index is a
LevelDB-style sorted table (data blocks of prefix-compressed keys with restart points, an index block
pointing at them, a 48-byte footer ending in a magic number; every block followed by a type byte and a
masked CRC-32C). Its values are `BundleEntryProto` protobuf messages (dtype, shape, shard, offset,
size, masked CRC-32C of the tensor bytes) keyed by variable name, plus a `BundleHeaderProto` under the
empty key. Shards hold raw little-endian tensor bytes. Everything is checked; any damage is one line.
"""

from __future__ import annotations

import importlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from expmrc.errors import ExpmrcError

try:  # optional C implementation (`pip install google-crc32c`, or the `fast` extra): ~20x the numpy path
    # imported by name, so type checking does not depend on whether the optional package is installed
    google_crc32c: Any = importlib.import_module("google_crc32c")
except ImportError:  # pragma: no cover - depends on the environment
    google_crc32c = None

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER_SIZE = 5
CRC_MASK_DELTA = 0xA282EAD8
SUPPORTED_BUNDLE_VERSION = 1  # the consumer version we implement (TensorFlow's kTensorBundleVersion)

# TensorFlow DataType enum values -> (name, little-endian numpy dtype). bfloat16 is read as uint16 bits.
DTYPES = {
    1: ("float32", "<f4"), 2: ("float64", "<f8"), 3: ("int32", "<i4"), 4: ("uint8", "u1"),
    5: ("int16", "<i2"), 6: ("int8", "i1"), 9: ("int64", "<i8"), 10: ("bool", "?"),
    14: ("bfloat16", "<u2"), 17: ("uint16", "<u2"), 19: ("float16", "<f2"), 22: ("uint32", "<u4"),
    23: ("uint64", "<u8"),
}
OTHER_DTYPES = {7: "string", 8: "complex64", 18: "complex128", 20: "resource", 21: "variant"}


# ---------------------------------------------------------------- CRC-32C (Castagnoli)

def _crc_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table[byte] = crc
    return table


_TABLE = _crc_table()
_TABLE_LIST = [int(x) for x in _TABLE]


def _advance_zeros(length: int) -> list[list[int]]:
    """Four 256-entry tables giving the CRC register after `length` zero bytes, one per register byte.

    The raw register update is linear over GF(2), so "feed `length` zeros" is a 32x32 bit matrix; it is
    built by repeated squaring of the one-zero-byte matrix (each matrix is kept as its 32 columns).
    """
    def apply(columns: list[int], vector: int) -> int:
        out, bit = 0, 0
        while vector:
            if vector & 1:
                out ^= columns[bit]
            vector >>= 1
            bit += 1
        return out

    one_byte = [_TABLE_LIST[(1 << b) & 0xFF] ^ ((1 << b) >> 8) for b in range(32)]
    result = [1 << b for b in range(32)]  # identity
    power = one_byte
    while length:
        if length & 1:
            result = [apply(power, c) for c in result]
        length >>= 1
        if length:
            power = [apply(power, c) for c in power]
    return [[apply(result, value << (8 * k)) for value in range(256)] for k in range(4)]


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of `data`, continuing from a previous result `crc` (0 to start).

    Uses the `google-crc32c` C extension when it is installed, else `crc32c_numpy`.
    """
    if google_crc32c is not None:
        return google_crc32c.extend(crc, data if isinstance(data, bytes) else bytes(data))  # needs read-only bytes
    return crc32c_numpy(data, crc)


def crc32c_numpy(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C in pure numpy/Python (the fallback), continuing from `crc` like `crc32c`.

    Long inputs are cut into equal chunks whose CRCs numpy computes side by side, then chained with the
    zero-advance tables, so a BERT-large checkpoint is verified in seconds rather than minutes.
    """
    view = memoryview(data).cast("B")
    n = len(view)
    register = (~crc) & 0xFFFFFFFF
    chunks = min(n // 512, 32768)
    if chunks < 64:
        for byte in view:
            register = _TABLE_LIST[(register ^ byte) & 0xFF] ^ (register >> 8)
        return (~register) & 0xFFFFFFFF
    length = n // chunks
    columns = np.frombuffer(view[: chunks * length], dtype=np.uint8).reshape(chunks, length).T.copy()
    partial = np.zeros(chunks, dtype=np.uint32)
    for column in columns:
        partial = _TABLE[(partial ^ column) & 0xFF] ^ (partial >> 8)
    z0, z1, z2, z3 = _advance_zeros(length)
    for value in partial.tolist():
        register = (z0[register & 0xFF] ^ z1[(register >> 8) & 0xFF] ^ z2[(register >> 16) & 0xFF]
                    ^ z3[register >> 24] ^ value)
    return crc32c_numpy(view[chunks * length:], (~register) & 0xFFFFFFFF)


def mask_crc(crc: int) -> int:
    """The masked form LevelDB and TensorFlow store (rotate right by 15 bits, add a constant)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + CRC_MASK_DELTA) & 0xFFFFFFFF


def unmask_crc(masked: int) -> int:
    """Inverse of mask_crc."""
    rotated = (masked - CRC_MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


# ---------------------------------------------------------------- protobuf wire format

def _varint(buf: bytes, pos: int, where: str) -> tuple[int, int]:
    """Decode one base-128 varint at `pos`; return (value, next position)."""
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ExpmrcError(f"{where}: truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ExpmrcError(f"{where}: malformed varint")


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_message(buf: bytes, where: str) -> dict[int, list]:
    """Protobuf fields of a message: {field number: [values]}; length-delimited values stay bytes."""
    fields: dict[int, list] = {}
    pos = 0
    value: int | bytes
    while pos < len(buf):
        key, pos = _varint(buf, pos, where)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, where)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos, where)
            value, pos = bytes(buf[pos:pos + size]), pos + size
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ExpmrcError(f"{where}: unsupported protobuf wire type {wire}")
        if pos > len(buf) or number == 0:
            raise ExpmrcError(f"{where}: malformed protobuf message")
        fields.setdefault(number, []).append(value)
    return fields


def _last(fields: dict[int, list], number: int, default=0):
    return fields[number][-1] if number in fields else default


# ---------------------------------------------------------------- sorted table (the .index file)

def _block_handle(buf: bytes, pos: int, where: str) -> tuple[int, int, int]:
    offset, pos = _varint(buf, pos, where)
    size, pos = _varint(buf, pos, where)
    return offset, size, pos


def _read_block(data: bytes, offset: int, size: int, path: str) -> bytes:
    """The contents of one table block, after checking its bounds, checksum and compression type."""
    end = offset + size + BLOCK_TRAILER_SIZE
    if end > len(data) - FOOTER_SIZE:
        raise ExpmrcError(f"{path}: block at byte {offset} runs past the end of the file (truncated or corrupt index)")
    stored = unmask_crc(int.from_bytes(data[offset + size + 1:end], "little"))
    if crc32c(data[offset:offset + size + 1]) != stored:
        raise ExpmrcError(f"{path}: checksum mismatch in the block at byte {offset} (corrupt index)")
    kind = data[offset + size]
    if kind == 1:
        raise ExpmrcError(f"{path}: the index uses Snappy-compressed blocks, which this reader does not support "
                          "(released BERT checkpoints are uncompressed)")
    if kind != 0:
        raise ExpmrcError(f"{path}: unknown block compression type {kind} (corrupt index)")
    return data[offset:offset + size]


def _block_entries(block: bytes, path: str) -> list[tuple[bytes, bytes]]:
    """Key/value pairs of a block: keys share a prefix with the previous key except at restart points."""
    where = f"{path}: index block"
    if len(block) < 4:
        raise ExpmrcError(f"{where} is too short (corrupt index)")
    restarts = int.from_bytes(block[-4:], "little")
    limit = len(block) - 4 - 4 * restarts
    if restarts < 1 or limit < 0:
        raise ExpmrcError(f"{where} has a bad restart count {restarts} (corrupt index)")
    restart_points = {int.from_bytes(block[limit + 4 * i:limit + 4 * i + 4], "little") for i in range(restarts)}
    entries: list[tuple[bytes, bytes]] = []
    key, pos, full_keys = b"", 0, set()
    while pos < limit:
        start = pos
        shared, pos = _varint(block, pos, where)
        unshared, pos = _varint(block, pos, where)
        value_size, pos = _varint(block, pos, where)
        if shared > len(key) or pos + unshared + value_size > limit:
            raise ExpmrcError(f"{where}: entry at byte {start} is malformed (corrupt index)")
        if shared == 0:
            full_keys.add(start)
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        entries.append((key, block[pos:pos + value_size]))
        pos += value_size
    if not {r for r in restart_points if r != limit} <= full_keys:  # an empty block restarts at its end
        raise ExpmrcError(f"{where}: restart points do not start full keys (corrupt index)")
    return entries


def read_table(path: str) -> list[tuple[bytes, bytes]]:
    """All key/value pairs of a LevelDB-format table file, in key order."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ExpmrcError(f"{path}: checkpoint index not found") from None
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot read checkpoint index: {exc.strerror}") from None
    if len(data) < FOOTER_SIZE or int.from_bytes(data[-8:], "little") != TABLE_MAGIC:
        raise ExpmrcError(f"{path}: not a TensorFlow checkpoint index (no table footer: truncated or corrupt)")
    footer = data[-FOOTER_SIZE:]
    _, _, pos = _block_handle(footer, 0, f"{path}: footer")  # the metaindex block: no meta blocks are used
    index_offset, index_size, _ = _block_handle(footer, pos, f"{path}: footer")
    entries: list[tuple[bytes, bytes]] = []
    for _, handle in _block_entries(_read_block(data, index_offset, index_size, path), path):
        offset, size, _ = _block_handle(handle, 0, f"{path}: index block")
        entries.extend(_block_entries(_read_block(data, offset, size, path), path))
    for (a, _), (b, _) in zip(entries, entries[1:]):
        if not a < b:
            raise ExpmrcError(f"{path}: keys out of order near {b.decode('utf-8', 'replace')!r} (corrupt index)")
    return entries


# ---------------------------------------------------------------- the bundle

@dataclass(frozen=True)
class TensorEntry:
    """Where one saved tensor lives and what it is."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    masked_crc32c: int
    partitioned: bool = False


def resolve_prefix(path: str) -> str:
    """The checkpoint prefix for a prefix, its `.index` or `.data-*` file, or a folder holding one index."""
    text = str(path)
    if os.path.isdir(text):
        indexes = sorted(p for p in os.listdir(text) if p.endswith(".index"))
        if len(indexes) != 1:
            found = ", ".join(indexes) if indexes else "none"
            raise ExpmrcError(f"{text}: expected one TensorFlow checkpoint (*.index) in the folder, found {found}")
        return os.path.join(text, indexes[0][: -len(".index")])
    if text.endswith(".index"):
        return text[: -len(".index")]
    if ".data-" in os.path.basename(text):
        return text[: text.rindex(".data-")]
    return text


class TFCheckpoint:
    """A TensorFlow V2 checkpoint opened by prefix: `entries` by name, `read(name)` for the values."""

    def __init__(self, prefix: str):
        self.prefix = resolve_prefix(prefix)
        self.index_path = f"{self.prefix}.index"
        if not os.path.exists(self.index_path):
            raise ExpmrcError(f"{self.index_path}: checkpoint index not found (give the prefix, e.g. .../bert_model.ckpt)")
        table = read_table(self.index_path)
        if not table or table[0][0] != b"":
            raise ExpmrcError(f"{self.index_path}: no bundle header entry (not a V2 checkpoint, or corrupt)")
        header = parse_message(table[0][1], f"{self.index_path}: header")
        self.num_shards = _last(header, 1)
        if _last(header, 2) != 0:
            raise ExpmrcError(f"{self.index_path}: checkpoint was written on a big-endian machine; not supported")
        version = parse_message(_last(header, 3, b""), f"{self.index_path}: header version")
        min_consumer = _last(version, 2)
        if min_consumer > SUPPORTED_BUNDLE_VERSION or SUPPORTED_BUNDLE_VERSION in version.get(3, []):
            raise ExpmrcError(f"{self.index_path}: checkpoint format version needs a newer reader "
                              f"(min consumer {min_consumer}, this reader implements {SUPPORTED_BUNDLE_VERSION})")
        if self.num_shards < 1:
            raise ExpmrcError(f"{self.index_path}: header names {self.num_shards} data shards (corrupt index)")
        self.entries: dict[str, TensorEntry] = {}
        for key, value in table[1:]:
            name = key.decode("utf-8", "replace")
            self.entries[name] = self._entry(name, value)

    def _entry(self, name: str, value: bytes) -> TensorEntry:
        where = f"{self.index_path}: entry {name}"
        fields = parse_message(value, where)
        code = _last(fields, 1)
        dtype = DTYPES[code][0] if code in DTYPES else OTHER_DTYPES.get(code, f"dtype#{code}")
        shape_fields = parse_message(_last(fields, 2, b""), where)
        shape = tuple(_signed64(_last(parse_message(dim, where), 1)) for dim in shape_fields.get(2, []))
        if any(d < 0 for d in shape) or _last(shape_fields, 3):
            raise ExpmrcError(f"{where}: tensor shape {shape} is not fully defined (corrupt index)")
        shard = _last(fields, 3)
        if not 0 <= shard < self.num_shards:
            raise ExpmrcError(f"{where}: shard {shard} outside the {self.num_shards} data files (corrupt index)")
        return TensorEntry(name=name, dtype=dtype, shape=shape, shard_id=shard, offset=_signed64(_last(fields, 4)),
                           size=_signed64(_last(fields, 5)), masked_crc32c=_last(fields, 6),
                           partitioned=7 in fields)

    def data_path(self, shard_id: int) -> str:
        """The file holding shard `shard_id`."""
        return f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}"

    def read(self, name: str, verify: bool = True) -> np.ndarray:
        """The tensor saved under `name` as a writable numpy array (bfloat16 widened to float32)."""
        entry = self.entries.get(name)
        if entry is None:
            raise ExpmrcError(f"{self.index_path}: no variable named {name!r}")
        if entry.partitioned:
            raise ExpmrcError(f"{self.index_path}: variable {name} is saved in partitions, which this reader does not support")
        code = next((c for c, (n, _) in DTYPES.items() if n == entry.dtype), None)
        if code is None:
            raise ExpmrcError(f"{self.index_path}: variable {name} has dtype {entry.dtype}, which this reader does not support")
        np_dtype = np.dtype(DTYPES[code][1])
        expected = math.prod(entry.shape) * np_dtype.itemsize
        if entry.size != expected:
            raise ExpmrcError(f"{self.index_path}: variable {name} claims {entry.size} bytes but "
                              f"{entry.dtype}{list(entry.shape)} needs {expected} (corrupt index)")
        path = self.data_path(entry.shard_id)
        buffer = bytearray(entry.size)
        try:
            with open(path, "rb") as f:
                f.seek(entry.offset)
                got = f.readinto(buffer)
        except FileNotFoundError:
            raise ExpmrcError(f"{path}: checkpoint data file not found") from None
        except OSError as exc:
            raise ExpmrcError(f"{path}: cannot read checkpoint data: {exc.strerror}") from None
        if got != entry.size:
            raise ExpmrcError(f"{path}: variable {name} ends past the end of the file (truncated data file)")
        if verify and crc32c(buffer) != unmask_crc(entry.masked_crc32c):
            raise ExpmrcError(f"{path}: checksum mismatch for variable {name} (corrupt data file)")
        array = np.frombuffer(buffer, dtype=np_dtype).reshape(entry.shape)
        if entry.dtype == "bfloat16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        return array

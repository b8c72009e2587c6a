"""CRC-32C throughput of the TensorFlow checkpoint reader (expmrc.tf_bundle.crc32c), which checks every
tensor it reads, against the plain table-driven byte loop it replaces and zlib's C CRC-32 (a different
polynomial, shown only as a yardstick for what compiled code does on this machine). Same run, same data.

    python benchmarks/bench_crc32c.py            # 64 MiB, about BERT-base's word-embedding matrix
    python benchmarks/bench_crc32c.py --mib 256
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from expmrc.models.tf_bundle import _TABLE_LIST, crc32c  # noqa: E402


def byte_loop(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE_LIST[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def best_of(repeats: int, func, *args) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=64, help="buffer size for the fast paths (default 64)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = np.random.default_rng(0).integers(0, 256, args.mib << 20, dtype=np.uint8).tobytes()
    small = data[: 1 << 20]  # the byte loop is timed on 1 MiB and scaled
    assert crc32c(small) == byte_loop(small)
    fast = best_of(args.repeats, crc32c, data)
    loop = best_of(1, byte_loop, small) * args.mib
    zlib_time = best_of(args.repeats, zlib.crc32, data)
    print(f"buffer: {args.mib} MiB, best of {args.repeats}")
    print(f"expmrc crc32c (numpy, chunked):  {args.mib / fast:8.1f} MiB/s")
    print(f"byte loop (pure Python):         {args.mib / loop:8.1f} MiB/s   (expmrc is {loop / fast:.0f}x faster)")
    print(f"zlib.crc32 (C, other polynomial): {args.mib / zlib_time:7.1f} MiB/s   (expmrc is at {zlib_time / fast:.2f}x of it)")
    print(f"time to verify BERT-large (1.34 GB of float32): {1340e6 / (args.mib * 1048576 / fast):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CRC-32C throughput of the TensorFlow checkpoint reader, which checks every tensor it reads: the
google-crc32c C extension (used when installed), the built-in numpy fallback, the plain table-driven
byte loop, and zlib's C CRC-32 (a different polynomial, a yardstick for compiled code on this machine).
Same run, same data.

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

from expmrc.models.tf_bundle import _TABLE_LIST, crc32c_numpy, google_crc32c  # noqa: E402


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
    assert crc32c_numpy(small) == byte_loop(small)
    fast = best_of(args.repeats, crc32c_numpy, data)
    loop = best_of(1, byte_loop, small) * args.mib
    zlib_time = best_of(args.repeats, zlib.crc32, data)
    print(f"buffer: {args.mib} MiB, best of {args.repeats}")
    if google_crc32c is not None:
        assert google_crc32c.value(small) == byte_loop(small)
        c_time = best_of(args.repeats, google_crc32c.value, data)
        print(f"google-crc32c (C, {google_crc32c.implementation}):         {args.mib / c_time:8.1f} MiB/s   "
              f"({fast / c_time:.0f}x the numpy fallback)")
    else:
        c_time = fast
        print("google-crc32c: not installed (pip install google-crc32c); the reader uses the numpy fallback")
    print(f"numpy fallback (chunked):        {args.mib / fast:8.1f} MiB/s")
    print(f"byte loop (pure Python):         {args.mib / loop:8.1f} MiB/s   (numpy is {loop / fast:.0f}x faster)")
    print(f"zlib.crc32 (C, other polynomial): {args.mib / zlib_time:7.1f} MiB/s")
    print(f"time to verify BERT-large (1.34 GB of float32) with the reader's path: "
          f"{1340e6 / (args.mib * 1048576 / c_time):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

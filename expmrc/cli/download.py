"""`expmrc download`: the four ExpMRC dev sets, from the official repository or a local copy."""

from __future__ import annotations

import argparse

from expmrc.data import subsets

DESCRIPTION = """\
Fetch the four ExpMRC dev sets (SQuAD, CMRC 2018, RACE+, C3) from the official repository at a
pinned commit, verify each file's sha256 and write it atomically to DEST/<subset>/expmrc-<subset>-dev.json.
Offline, --from imports the same files from a local folder (searched by file name) or zip archive.
A checksum mismatch writes nothing; a zip entry that would land outside the destination is refused.
This is the only command that reaches the network.

examples:
  expmrc download                       # into data/
  expmrc download --dest ~/expmrc-data --subsets squad race
  expmrc download --from expmrc-master.zip
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", default="data", help="destination folder (default: data/)")
    parser.add_argument("--from", dest="source", metavar="PATH", help="import from a local folder or zip instead of downloading")
    parser.add_argument("--subsets", nargs="+", default=list(subsets.official()), metavar="SUBSET",
                        help="which dev sets (default: all four)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data import download as dl
    from expmrc.data.io import check_output_path

    subsets = dl.check_subsets(args.subsets)
    check_output_path(args.dest, "dir")
    todo = [s for s in subsets if not dl.is_present(args.dest, s)]
    for s in subsets:
        if s not in todo:
            print(f"{dl.destination(args.dest, s)}: already present, checksum ok")
    if not todo:
        return 0
    if args.source:
        payloads, origin = dl.read_local(args.source, todo), args.source
    else:
        payloads, origin = {}, f"github.com/ymcui/expmrc@{dl.COMMIT[:7]}"
        for s in todo:
            print(f"downloading {dl.file_name(s)} from {origin} ...")
            payloads[s] = dl.fetch(s)
    for path in dl.install(payloads, args.dest, origin):
        print(f"{path}: written, checksum ok")
    return 0

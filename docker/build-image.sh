#!/usr/bin/env bash
# Builds the Dockerfile with podman, as CI and tests/container do: `docker/build-image.sh [TAG]` (default
# warrenmq:test), from the checkout this script is in. The base image comes from docker/make-base-image.sh
# (present, pulled, or a stand-in made from Debian packages), so no registry is needed: --pull=never.
# --format docker keeps HEALTHCHECK (the OCI image format has no place for it); --network host because the
# build's RUN steps reach apt and pip the way this machine does.
# Exit 2 when the base image can neither be pulled nor made (the container tests then skip), 1 when the build
# itself fails. The build's seconds go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-warrenmq:test}
# One build at a time on this machine (podman's storage is the machine's): .ci/run builds the image beside the
# suites' set-up, and tests/container's fixture builds again; waiting here, the second finds every layer cached
# instead of building the same layers at the same time.
exec 9>"${TMPDIR:-/tmp}/warrenmq-build-image.lock"
flock 9

if ! bash docker/make-base-image.sh; then
  echo "build-image: no base image (docker/make-base-image.sh failed)" >&2
  exit 2
fi
start=$(date +%s)
podman build --pull=never --network host --format docker --tag "$TAG" . || exit 1
echo "build-image: built $TAG in $(($(date +%s) - start)) s" >&2

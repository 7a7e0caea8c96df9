#!/usr/bin/env bash
# Makes the Dockerfile's base image, docker.io/library/python:3.11-slim, present in podman's local storage, so
# that `podman build --pull=never --network host .` builds the Dockerfile unchanged where no image registry is
# reachable (CI, these machines). Kept in podman's storage: a second run returns at once.
#
# In order: the image already there; a pull of the real one; else a stand-in made from Debian's own packages
# (bookworm has Python 3.11 as the real image does): mmdebstrap's minbase with python3, pip, venv and the
# headers, `python`/`pip` in /usr/local/bin as in the real image, pip allowed to install system-wide (no
# EXTERNALLY-MANAGED), and this machine's CA bundle, apt sources and pip index, so that apt and pip inside the
# build reach the package registries the way this machine does. Docs and man pages are left out as in the
# slim images. Needs root, podman and mmdebstrap. Prints what it did on stderr; exit 0 once the image is there.
set -euo pipefail

IMAGE=${WARRENMQ_BASE_IMAGE:-docker.io/library/python:3.11-slim}

if podman image exists "$IMAGE"; then
  exit 0
fi
# Without a registry the pull fails at name resolution; the timeout bounds a registry that does not answer.
if timeout 120 podman pull -q "$IMAGE" >/dev/null 2>&1; then
  echo "make-base-image: pulled $IMAGE" >&2
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "make-base-image: $IMAGE cannot be pulled and mmdebstrap is missing" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# This machine's apt sources (a local mirror or proxy carries over); mmdebstrap's default mirror otherwise.
mirror=()
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=(/etc/apt/sources.list.d/debian.sources)
fi

# The pip index this machine uses, when it is one a container can reach (http/https, not file://): the index of
# `pip config` or PIP_INDEX_URL / PIP_EXTRA_INDEX_URL. The stand-in's /etc/pip.conf carries it and the CA bundle.
{
  echo "[global]"
  echo "cert = /etc/ssl/certs/ca-certificates.crt"
  index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
  extra=${PIP_EXTRA_INDEX_URL:-$(python3 -m pip config get global.extra-index-url 2>/dev/null || true)}
  case "$index" in http://* | https://*) echo "index-url = $index" ;; esac
  extra=$(printf '%s\n' $extra | grep -E '^https?://' | tr '\n' ' ' || true)
  [ -z "$extra" ] || echo "extra-index-url = $extra"
} >"$work/pip.conf"

start=$(date +%s)
# The CA bundle is copied in last: ca-certificates' own trigger would rebuild it from Debian's list only.
mmdebstrap --quiet --variant=minbase \
  --include=python3,python3-pip,python3-venv,python3-dev,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"' \
  --customize-hook='ln -sf /usr/bin/pip3 "$1/usr/local/bin/pip"' \
  --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
  --customize-hook="copy-in $work/pip.conf /etc" \
  --customize-hook='copy-in /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$work/rootfs.tar" "${mirror[@]}"

# The real image's environment and command.
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  --message "stand-in for $IMAGE, made by docker/make-base-image.sh from Debian bookworm" \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
echo "make-base-image: made a stand-in for $IMAGE from Debian packages in $(($(date +%s) - start)) s" >&2

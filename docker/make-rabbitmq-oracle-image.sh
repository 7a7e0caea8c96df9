#!/usr/bin/env bash
# Makes the RabbitMQ 4.0 oracle image, warrenmq-oracle/rabbitmq:4.0.5, present in podman's local storage:
# Debian trixie's rabbitmq-server package (4.0.5 on Erlang 27) in an mmdebstrap minbase rootfs, imported with
# `podman import`. The differential tests run it on the host network with private ports
# (tests/compat/rabbitmq4_node.py). Kept in podman's storage, as docker/make-base-image.sh keeps its image: a
# second run returns at once. The tests call this behind a lock, once per machine.
#
# Exit 0 once the image is there; 2 when it cannot be made here (no podman, no mmdebstrap, trixie unreachable),
# with the reason as the last line on stderr; 1 on any other failure. Needs root.
set -euo pipefail

IMAGE=${WARRENMQ_RABBITMQ4_IMAGE:-warrenmq-oracle/rabbitmq:4.0.5}
VERSION=4.0.5
# Debian's mirror, not this machine's apt sources: those name bookworm's suites. A local mirror or proxy that
# carries trixie can be given here.
MIRROR=${WARRENMQ_TRIXIE_MIRROR:-http://deb.debian.org/debian}

cannot() {
  echo "make-rabbitmq-oracle-image: $*" >&2
  exit 2
}

command -v podman >/dev/null || cannot "podman is missing (apt-get install podman runc)"
if podman image exists "$IMAGE"; then
  exit 0
fi
command -v mmdebstrap >/dev/null || cannot "mmdebstrap is missing (apt-get install mmdebstrap)"
# trixie's Release file, to tell an unreachable mirror from a failed build.
if ! python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30)' \
  "$MIRROR/dists/trixie/Release" >/dev/null 2>&1; then
  cannot "Debian trixie is not reachable at $MIRROR (set WARRENMQ_TRIXIE_MIRROR to a mirror that carries it)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
# The package's own postinst starts nothing in a chroot (no init); the container runs rabbitmq-server itself.
# The customize hook fails the build when trixie no longer carries the release the image is named after.
mmdebstrap --quiet --variant=minbase --include=rabbitmq-server \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Version}' rabbitmq-server | grep -q '^$VERSION'" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  trixie "$work/rootfs.tar" "$MIRROR"

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/usr/lib/rabbitmq/bin/rabbitmq-server"]' \
  --message "RabbitMQ $VERSION from Debian trixie, made by docker/make-rabbitmq-oracle-image.sh" \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
echo "make-rabbitmq-oracle-image: made $IMAGE from Debian trixie in $(($(date +%s) - start)) s" >&2

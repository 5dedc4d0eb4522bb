#!/usr/bin/env bash
# Build agentgym's offline Debian base image: a minimal Debian with python3, imported into Docker.
#
# There is no image registry on agentgym's machines, so `FROM debian`/`FROM python` cannot be
# pulled. This script makes the base image from Debian packages alone:
#
#   debootstrap --variant=minbase --include=$PACKAGES $SUITE ROOTFS $MIRROR
#   tar -C ROOTFS -c . | docker import - $IMAGE
#
# It is idempotent: when $IMAGE already exists it does nothing (FORCE=1 rebuilds). Needs root
# (debootstrap), a running dockerd, and the `debootstrap` package (apt-get install debootstrap).
# Takes a few minutes (downloading and unpacking ~100 packages); the image is about 200 MB.
#
# Used by agentgym.sandbox's docker backend (Sandbox(backend="docker")) and by the family
# Dockerfiles in containers/, which take the image as a build argument (ARG BASE=agentgym/base:bookworm)
# so that elsewhere they can build FROM python:3.x-slim instead.
#
# Settings (environment variables):
#   IMAGE     image name                         (default agentgym/base:bookworm)
#   SUITE     Debian release                     (default bookworm)
#   MIRROR    Debian mirror                      (default http://deb.debian.org/debian)
#   PACKAGES  comma-separated extra packages     (default: python3 plus the shell tools code tasks use)
#   FORCE=1   rebuild even if the image exists
#
# Usage:  sudo containers/base/build.sh            # or: IMAGE=myname:tag PACKAGES=python3,git containers/base/build.sh
set -euo pipefail

IMAGE="${IMAGE:-agentgym/base:bookworm}"
SUITE="${SUITE:-bookworm}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
PACKAGES="${PACKAGES:-python3,procps,file,tree,zip,unzip,bzip2,xz-utils,bc,jq,less}"
FORCE="${FORCE:-0}"

log() { printf '[build.sh] %s\n' "$*" >&2; }

for tool in docker debootstrap tar; do
    command -v "$tool" >/dev/null 2>&1 || { log "missing '$tool' (apt-get install docker.io debootstrap)"; exit 1; }
done
if ! docker info >/dev/null 2>&1; then
    log "cannot reach dockerd; start it (e.g. 'dockerd > /tmp/dockerd.log 2>&1 &') and retry"
    exit 1
fi
if [ "$FORCE" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "$IMAGE already exists; nothing to do (FORCE=1 rebuilds)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    log "debootstrap needs root; run with sudo"
    exit 1
fi

ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/agentgym-rootfs.XXXXXX")"
chmod 755 "$ROOTFS"  # the root folder: mktemp's 0700 keeps the packages' scripts run as other users (postgres) out
cleanup() {
    # debootstrap may leave /proc, /sys or /dev mounted inside ROOTFS when it fails: unmount them
    # (deepest first) before deleting, and never cross into another file system while deleting.
    # Keeps the script's exit status (a clean-up step that finds nothing to do is no failure).
    local status=$?
    set +e
    awk -v root="$ROOTFS/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mountpoint; do
        umount -l "$mountpoint"
    done
    rm -rf --one-file-system "$ROOTFS"
    exit "$status"
}
trap cleanup EXIT

start=$(date +%s)
log "debootstrap $SUITE ($PACKAGES) into $ROOTFS from $MIRROR"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >&2

# Slim the image: package caches, lists, documentation and man pages are not needed at run time.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*

log "importing into docker as $IMAGE"
tar -C "$ROOTFS" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --message "agentgym base: debootstrap --variant=minbase $SUITE with $PACKAGES" \
    - "$IMAGE" >&2
docker run --rm --network none "$IMAGE" python3 -c 'import sys; print("python", sys.version.split()[0])' >&2
log "built $IMAGE in $(($(date +%s) - start)) s"

#!/usr/bin/env bash
# Make the base image phoneenv-base:bookworm (Debian bookworm, minbase, with python3, venv, pip and
# CA certificates) with debootstrap, for machines where no registry serves python:3.11-slim.
# Needs root, debootstrap and a running Docker engine. Several minutes (5.5 min measured on a busy
# 2-core machine), most of them downloading and unpacking packages; less with a near mirror.
#
#   docker/base-image.sh [IMAGE [MIRROR]]
#   DOCKER_BUILDKIT=1 docker build --build-arg BASE_IMAGE=phoneenv-base:bookworm \
#       -f docker/virtual-device.Dockerfile -t phoneenv-virtual-device .
#
# MIRROR defaults to the first Debian mirror in this machine's apt sources, else deb.debian.org.
set -euo pipefail
image="${1:-phoneenv-base:bookworm}"
mirror="${2:-}"
if [ -z "$mirror" ]; then
    mirror="$(grep -hoE '(URIs:|^deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
        /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n1 || true)"
    mirror="${mirror:-http://deb.debian.org/debian}"
fi
if docker image inspect "$image" >/dev/null 2>&1; then
    echo "$image exists"
    exit 0
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root/rootfs" "$mirror" >"$root/debootstrap.log" 2>&1 \
    || { tail -n 30 "$root/debootstrap.log"; exit 1; }
rm -rf "$root/rootfs/var/cache/apt/archives/"*.deb "$root/rootfs/var/lib/apt/lists/"*
tar -C "$root/rootfs" -c . | docker import - "$image"
echo "made $image from $mirror"

#!/usr/bin/env bash
# What building berth needs beyond Rust: a C compiler (libgit2 is built from
# its sources) and cmake (libgit2's zlib is zlib-ng, built by cmake so that
# each of its SIMD files alone gets its CPU flags). Debian packages named as
# arguments are installed with them (scripts/test.sh names the tests').
# Installs what is missing as root; as a user it names the packages and stops.
# Run by scripts/test.sh, the demos, the bench scripts and .ci/run before they
# build.
set -euo pipefail

need=("$@")
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need+=(make)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "building and testing berth needs: ${need[*]}" >&2
  if command -v apt-get >/dev/null 2>&1; then
    echo "  install them with: sudo apt-get install ${need[*]}" >&2
  else
    echo "  install them with your system's package manager, then build again" >&2
  fi
  exit 2
fi
echo "== installing: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null

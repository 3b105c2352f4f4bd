#!/usr/bin/env bash
# Installs the Debian packages a list names (one per line, # comments) that are missing: with
# apt-get when run as root; otherwise prints the command and fails.
#   bash tools/install-debian-packages.sh tools/debian-packages.txt   (the build and tests)
#   bash tools/install-debian-packages.sh bench/debian-packages.txt   (npm run bench's peers)
set -euo pipefail
list=$1

mapfile -t PACKAGES < <(grep -v '^#' "$list" | grep -v '^$')

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}"
    bash -c "$cmd"
  else
    echo "setup: missing Debian packages ($list). Run as root:" >&2
    echo "  sudo bash -c '$cmd'" >&2
    exit 1
  fi
fi

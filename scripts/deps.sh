#!/usr/bin/env bash
# Installs the system packages bastion's real-part tests and demo use:
# Debian's chromium and stable fonts. Idempotent; quiet when all is present.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || [ -n "${BASTION_CHROME:-}" ] || need+=(chromium)
[ -d /usr/share/fonts/truetype/noto ] || need+=(fonts-noto-core)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
[ -d /usr/share/fonts/truetype/liberation ] || need+=(fonts-liberation)
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${need[*]}; install them (Debian: apt-get install ${need[*]}) or tests that need them will skip" >&2
  exit 0
fi
echo "deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

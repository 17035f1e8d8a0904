#!/usr/bin/env bash
# Installs the system packages bastion's real-part tests and demo use:
# Debian's chromium and stable fonts, and the documentation packages whose
# HTML sites are the design review's real-world regression set
# and its held-out set (engine/local/realworld/testdata). Idempotent; quiet
# when all is present.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || [ -n "${BASTION_CHROMIUM:-${BASTION_CHROME:-}}" ] || need+=(chromium)
[ -d /usr/share/fonts/truetype/noto ] || need+=(fonts-noto-core)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
[ -d /usr/share/fonts/truetype/liberation ] || need+=(fonts-liberation)
# The real-world set: mdBook and rustdoc (rust-doc), Sphinx (python3-doc),
# AsciiDoc (git-doc), SQLite's own (sqlite3-doc), DocBook (postgresql-doc-15)
# and Texinfo (gettext-doc). Not nodejs-doc: it conflicts with the NodeSource
# Node.js these machines ship, and installing it removes the node and npm the
# conformance suite runs on.
[ -d /usr/share/doc/rust-doc/html/book ] || need+=(rust-doc)
[ -d /usr/share/doc/python3.11-doc/html ] || need+=(python3-doc)
[ -f /usr/share/doc/git-doc/git-commit.html ] || need+=(git-doc)
[ -f /usr/share/doc/sqlite3/quickstart.html ] || need+=(sqlite3-doc)
[ -d /usr/share/doc/postgresql-doc-15/html ] || need+=(postgresql-doc-15)
[ -f /usr/share/doc/gettext/gettext_1.html ] || need+=(gettext-doc)
# The held-out set (TestHeldOut), sites the regression set does not use:
# DocBook XSL (debian-reference-en, maint-guide), Sphinx
# (developers-reference, cmake-doc) and Doxygen (doxygen-doc).
[ -f /usr/share/doc/debian-reference-en/docs/ch04.en.html ] || need+=(debian-reference-en)
[ -f /usr/share/doc/maint-guide/html/start.en.html ] || need+=(maint-guide)
[ -f /usr/share/doc/developers-reference/docs/scope.html ] || need+=(developers-reference)
[ -f /usr/share/doc/cmake-doc/html/index.html ] || need+=(cmake-doc)
[ -f /usr/share/doc/doxygen/html/install.html ] || need+=(doxygen-doc)
# npm installs the official conformance suite (scripts/conformance.sh).
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)

# axe-core, the reference the accessibility cases are compared with
# (checks.TestAccessibilityCases/axe-core), comes from the npm registry at a
# pinned version into a cache outside the repository; internal/testenv finds
# it there (BASTION_AXE_CACHE names another cache). It needs no root, so it is
# installed whether or not the system packages can be.
AXE="axe-core@${AXE_VERSION:-4.14.1}"
AXE_CACHE="${BASTION_AXE_CACHE:-$HOME/.cache/bastion-axe}"
install_axe() {
  command -v npm >/dev/null 2>&1 || return 0
  local have
  have="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$AXE_CACHE/node_modules/axe-core/package.json" 2>/dev/null | head -n1 || true)"
  [ "axe-core@$have" = "$AXE" ] && [ -f "$AXE_CACHE/node_modules/axe-core/axe.min.js" ] && return 0
  mkdir -p "$AXE_CACHE"
  [ -f "$AXE_CACHE/package.json" ] || printf '{"name":"bastion-axe","private":true}\n' >"$AXE_CACHE/package.json"
  echo "deps: installing $AXE into $AXE_CACHE" >&2
  (cd "$AXE_CACHE" && npm install --no-audit --no-fund --silent --save-exact "$AXE") >&2 ||
    echo "deps: could not install $AXE; the axe-core comparison test will skip" >&2
}

if [ ${#need[@]} -eq 0 ]; then
  install_axe
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${need[*]}; install them (Debian: apt-get install ${need[*]}) or tests that need them will skip" >&2
  install_axe
  exit 0
fi
echo "deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
install_axe

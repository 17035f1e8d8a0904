#!/usr/bin/env bash
# gofmt and staticcheck must be clean. staticcheck comes from the Go module proxy.
set -euo pipefail
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt: needs formatting:"; echo "$bad"; exit 1; fi
# A pinned version, so a new release cannot change what passes.
SC_VERSION=v0.8.2 # staticcheck 2026.2.2
SC="$(go env GOPATH)/bin/staticcheck"
if ! "$SC" -version 2>/dev/null | grep -q "(${SC_VERSION#v})"; then
  go install "honnef.co/go/tools/cmd/staticcheck@$SC_VERSION"
fi
"$SC" ./...
echo "lint: gofmt and staticcheck clean"

#!/usr/bin/env bash
# gofmt and staticcheck must be clean. staticcheck comes from the Go module proxy.
set -euo pipefail
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt: needs formatting:"; echo "$bad"; exit 1; fi
SC="$(go env GOPATH)/bin/staticcheck"
if [ ! -x "$SC" ]; then
  go install honnef.co/go/tools/cmd/staticcheck@2025.1.1 >/dev/null 2>&1 || go install honnef.co/go/tools/cmd/staticcheck@latest
fi
"$SC" ./...
echo "lint: gofmt and staticcheck clean"

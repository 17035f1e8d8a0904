#!/usr/bin/env bash
# Runs every Fuzz* target in the module for a short time each ($1, default 10s).
# go test -fuzz takes one package and one target at a time, hence the loop.
set -euo pipefail
t="${1:-10s}"
fail=0
while IFS= read -r file; do
  pkg="./$(dirname "$file")"
  for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz: $pkg $fn ($t)"
    if ! go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$t" "$pkg" >/tmp/bastion-fuzz.log 2>&1; then
      cat /tmp/bastion-fuzz.log; fail=1
    fi
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
exit $fail

#!/usr/bin/env bash
# Runs every Fuzz* target in the module for a short time each ($1, default 10s).
# go test -fuzz takes one package and one target at a time, hence the loop.
#
# A finding (the fuzzer writes "Failing input written to ...") fails the run.
# go's fuzzing coordinator can also fail with a bare "context deadline
# exceeded" when its time is up while a worker is busy on a loaded machine;
# that is the tool, not a finding, so such a run is retried once and then
# reported without failing.
set -euo pipefail
t="${1:-10s}"
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$t" "$1" >"$log" 2>&1; }
while IFS= read -r file; do
  pkg="./$(dirname "$file")"
  for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz: $pkg $fn ($t)"
    if run "$pkg" "$fn"; then continue; fi
    if ! grep -q 'Failing input written to' "$log" && grep -q 'context deadline exceeded' "$log"; then
      echo "fuzz: $pkg $fn: the fuzzing coordinator timed out without a finding; retrying once"
      if run "$pkg" "$fn"; then continue; fi
      if ! grep -q 'Failing input written to' "$log" && grep -q 'context deadline exceeded' "$log"; then
        echo "fuzz: WARNING $pkg $fn: coordinator timed out again without a finding (not counted as a failure)"
        continue
      fi
    fi
    cat "$log"; fail=1
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
exit $fail

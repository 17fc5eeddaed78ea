#!/usr/bin/env bash
# Every Go fuzz target of the repository (each `func Fuzz...` of a _test.go file), one after
# another, for FUZZTIME each (`make fuzz`; `go test` runs only their seed corpora). A target
# that finds a failing input fails the run: go test writes the input to
# <package>/testdata/fuzz/<Target>/<hash>, and the summary names it with the command that
# replays it. Commit that file with the fix: it is then a seed `go test` runs.
#
# Usage: hack/fuzz.sh
#   FUZZTIME=30s      how long each target runs (a duration, or Nx for N executions)
#   FUZZPARALLEL=N    fuzzing workers per target (default: Go's, GOMAXPROCS)
#   FUZZ='Values|Split'  only the targets whose name matches this extended regexp
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZPARALLEL=${FUZZPARALLEL:-}
FUZZ=${FUZZ:-}

# "<package dir> <target>" per line, sorted.
targets=$(grep -rn --include='*_test.go' --exclude-dir=.git --exclude-dir=bin --exclude-dir=node_modules '^func Fuzz' . |
	sed -E 's|^(.*)/[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*$|\1 \2|' | sort)
if [[ -n $FUZZ ]]; then
	targets=$(awk -v re="$FUZZ" '$2 ~ re' <<<"$targets")
fi
if [[ -z $targets ]]; then
	echo "fuzz: no fuzz target found${FUZZ:+ matching $FUZZ}" >&2
	exit 1
fi

parallel=()
if [[ -n $FUZZPARALLEL ]]; then
	parallel=(-parallel "$FUZZPARALLEL")
fi
total=$(wc -l <<<"$targets")
failed=()
i=0
while read -r dir name; do
	i=$((i + 1))
	echo "=== fuzz [$i/$total] $name ($dir) for $FUZZTIME"
	log=$(mktemp)
	if $GO test "$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "${parallel[@]}" </dev/null 2>&1 | tee "$log"; then
		rm -f "$log"
		continue
	fi
	# go test prints "Failing input written to testdata/fuzz/<Target>/<hash>" on a finding.
	input=$(sed -nE 's|.*Failing input written to (testdata/fuzz/[^ ]+).*|\1|p' "$log" | tail -n 1)
	rm -f "$log"
	if [[ -n $input ]]; then
		failed+=("$name ($dir): a failing input in ${dir#./}/$input; replay it: $GO test $dir -run '^${name}\$/${input##*/}\$'")
	else
		failed+=("$name ($dir): failed without a new input — a seed fails or the package does not build (see above)")
	fi
done <<<"$targets"

if ((${#failed[@]} > 0)); then
	echo >&2
	echo "FUZZING FAILED: ${#failed[@]} of $total targets:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: $total targets, $FUZZTIME each, no failing input"

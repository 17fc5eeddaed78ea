#!/usr/bin/env bash
# Benchmarks that matter, each printed next to a baseline measured in the same run (this
# machine is noisy: compare ratios, not absolute times).
#
#   1. render: `helm template` vs `driverguard render` (whole processes, same values file), and
#      vs the Go renderer in-process (BenchmarkRender), for 10/100/500 instances.
#   2. the Go benchmarks of the routing engine (BenchmarkRoute, BenchmarkConflicts).
#   3. the policy engine: one evaluation of the bundled library vs a single trivial rule
#      (BenchmarkEvaluate).
#
# Usage: hack/bench.sh [runs]   (runs per measurement, default 5; medians are reported)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
GO=${GO:-go}

bash hack/tools.sh helm >&2
$GO build -o bin/driverguard ./cmd/driverguard
HELM=bin/helm
DG=bin/driverguard
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# values with n instances exercising every inheritance rule (mirrors benchValues in
# render/bench_test.go).
gen_values() {
	local n=$1 i
	{
		echo "driver:"
		echo "  resources: {limits: {cpu: 500m, memory: 128Mi}}"
		echo "  annotations: {team: npu}"
		echo "  tolerations: [{key: npu, operator: Exists}]"
		echo "  instances:"
		for ((i = 0; i < n; i++)); do
			printf '    inst-%04d:\n      nodeSelector: {rebellions.ai/npu.family: fam%d, pool: p%d}\n      image: {tag: "3.%d.%d"}\n' \
				"$i" $((i % 7)) "$i" $((i % 5)) "$i"
			case $((i % 4)) in
			0) echo '      resources: {limits: {cpu: "2"}}' ;;
			1) echo '      tolerations: []' ;;
			2) echo '      annotations: {team: null, canary: "true"}' ;;
			esac
		done
	} >"$work/values-$n.yaml"
}

# median wall time in milliseconds of RUNS runs of a command (output discarded).
now_ns() { date +%s%N; }
median_ms() {
	local -a times=()
	local i start end
	for ((i = 0; i < RUNS; i++)); do
		start=$(now_ns)
		"$@" >/dev/null
		end=$(now_ns)
		times+=($(((end - start) / 1000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

echo "== render: helm template vs driverguard render (median of $RUNS runs, wall ms)"
printf '%-10s %14s %18s %14s %18s %10s\n' instances "helm template" "driverguard render" "ratio(proc)" "Go in-process" "ratio"
bench_out=$($GO test -run '^$' -bench 'BenchmarkRender$' -benchtime 20x ./render/ 2>&1) || { echo "$bench_out" >&2; exit 1; }
for n in 10 100 500; do
	gen_values "$n"
	# interleave the two so drift on a noisy machine hits both alike
	h=$(median_ms "$HELM" template bench ./charts/driverguard -f "$work/values-$n.yaml")
	g=$(median_ms "$DG" render -f "$work/values-$n.yaml")
	inproc=$(echo "$bench_out" | awk -v n="$n" '$1 ~ "instances="n"(-[0-9]+)?$" {printf "%.2f", $3/1e6}')
	printf '%-10s %14s %18s %14s %18s %10s\n' "$n" "$h" "$g" \
		"$(awk -v a="$h" -v b="$g" 'BEGIN{printf "%.1fx", a/b}')" "$inproc" \
		"$(awk -v a="$h" -v b="$inproc" 'BEGIN{ if (b>0) printf "%.1fx", a/b; else print "n/a"}')"
done
echo "(ratio(proc): helm template / driverguard render, both whole processes; ratio: helm template / Go renderer in-process)"

echo
echo "== routing engine (go test -bench; goals: Route 10k nodes x 500 drivers <= 100 ms, Conflicts <= 1 ms)"
$GO test -run '^$' -bench 'BenchmarkRoute|BenchmarkConflicts' -benchtime 5x ./routing/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)'

echo
echo "== admission webhook: full HTTPS path vs in-process (go test -bench BenchmarkAdmission; per request, microseconds)"
# decision: DriverValidator.ValidateCreate; in-process: the admission handler (decode, decide,
# respond); https: AdmissionReview over TLS 1.3 on loopback to controller-runtime's webhook
# server and back, one request at a time. ratio = https / in-process.
# driver+policies: the same request with the bundled policy library (serve's default), fewer runs.
adm_out=$($GO test -run '^$' -bench 'BenchmarkAdmission$' -benchtime 3000x ./webhook/ 2>&1) || { echo "$adm_out" >&2; exit 1; }
pol_out=$($GO test -run '^$' -bench 'BenchmarkAdmissionWithPolicies' -benchtime 30x ./webhook/ 2>&1) || { echo "$pol_out" >&2; exit 1; }
printf '%s\n%s\n' "$adm_out" "$pol_out" | sed 's/^BenchmarkAdmissionWithPolicies\//BenchmarkAdmission\//' | awk '
	/^BenchmarkAdmission\// {
		name = $1; sub(/^BenchmarkAdmission\//, "", name); sub(/-[0-9]+$/, "", name)
		n = split(name, part, "/"); path = part[n]; key = name; sub("/" path "$", "", key)
		for (i = 2; i < NF; i++) { if ($(i+1) == "p50-ns") p50[key, path] = $i / 1000; if ($(i+1) == "p99-ns") p99[key, path] = $i / 1000 }
		if (!(key in seen)) { seen[key] = 1; order[++count] = key }
	}
	END {
		printf "%-36s %12s %12s %12s %12s %12s %12s %8s %8s\n", "case", "decision p50", "decision p99", "in-proc p50", "in-proc p99", "https p50", "https p99", "p50 x", "p99 x"
		for (i = 1; i <= count; i++) {
			k = order[i]
			d50 = ((k, "decision") in p50) ? sprintf("%.1f", p50[k, "decision"]) : "-"
			d99 = ((k, "decision") in p99) ? sprintf("%.1f", p99[k, "decision"]) : "-"
			printf "%-36s %12s %12s %12.1f %12.1f %12.1f %12.1f %7.1fx %7.1fx\n", k, d50, d99,
				p50[k, "in-process"], p99[k, "in-process"], p50[k, "https"], p99[k, "https"],
				p50[k, "https"] / p50[k, "in-process"], p99[k, "https"] / p99[k, "in-process"]
		}
	}'

echo
echo "== policy engine: one prepared evaluation of one RBLNDriver (go test -bench, µs/op)"
echo "   the full bundled library vs a single trivial rule (the baseline), in the same run"
policy_out=$($GO test -run '^$' -bench 'BenchmarkEvaluate$' -benchtime 2s ./policy/ 2>&1) || { echo "$policy_out" >&2; exit 1; }
printf '%-10s %14s %14s %14s %8s\n' nodes "trivial rule" "library" "library cost" ratio
for n in 12 1000; do
	us() { echo "$policy_out" | awk -v k="$1/nodes=$n" '$1 ~ "^BenchmarkEvaluate/"k"(-[0-9]+)?$" {printf "%.1f", $3/1000}'; }
	t=$(us trivial)
	l=$(us library)
	printf '%-10s %14s %14s %14s %8s\n' "$n" "$t" "$l" \
		"$(awk -v a="$l" -v b="$t" 'BEGIN{printf "%.1f", a-b}')" \
		"$(awk -v a="$l" -v b="$t" 'BEGIN{ if (b>0) printf "%.1fx", a/b; else print "n/a"}')"
done
echo "(µs per Evaluate: input conversion + query; 'library cost' is what the bundled rules add)"

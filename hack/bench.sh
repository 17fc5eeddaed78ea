#!/usr/bin/env bash
# Benchmarks that matter, each printed next to a baseline measured in the same run (this
# machine is noisy: compare ratios, not absolute times).
#
#   1. render: `helm template` vs `driverguard render` (whole processes, same values file), and
#      vs the Go renderer in-process (BenchmarkRender), for 10/100/500 instances.
#   2. the Go benchmarks of the routing engine (BenchmarkRoute, BenchmarkConflicts).
#   3. policy test suites (BenchmarkTestSuite): 200 cases over the library at 1,000 nodes
#      against the 2 s goal, and per case against a one-case suite.
#   3b. plan at scale (BenchmarkPlan): plan.Make at 10,000 nodes, 500 drivers, 50,000 pods and
#      2,000 PDBs against the 2 s goal, and against a tenth of that (the scaling ratio).
#   3c. plan -o html at 10,000 nodes (BenchmarkPlanHTML): bytes and time against -o json of the
#      same plan, in one run (goal: at most 2x each).
#   4. the policy engine: one evaluation of the bundled library vs a single trivial rule
#      (BenchmarkEvaluate), and a whole AdmissionReview through the webhook's handler on a
#      small and a large cluster (BenchmarkServeHTTP).
#   4b. the same per request in the side-by-side harness's shape (BenchmarkServeHTTPRack: a
#      rack of REBEL nodes, 2 of 100 or 200 of 10,000), 10,000 / 100 nodes as the issue #35
#      goals state them, and the pieces issue #35 changed (BenchmarkObjectValue, BenchmarkDecodeJSON,
#      BenchmarkValidateDriver).
#   5. check and policy input at scale: 1,000 and 2,000 instances against 10,000 nodes
#      (wall time, peak RSS, the doubling ratio).
#   6. serve's resident memory at 10,000 nodes and 500 RBLNDrivers (hack/servemem: a real
#      kube-apiserver and etcd, serve as its own process), without and with the audit; with
#      it, relabel-to-report latency and report writes under a burst of 1,000 relabels.
#   7. the served webhook side by side with OPA's own server: hack/perf/run.sh (PERF_DIR),
#      when present; it is how admission speed is judged.
#
# Usage: hack/bench.sh [runs]   (runs per measurement, default 5; medians are reported)
#   PERF_DIR=hack/perf  the side-by-side admission harness (skipped when absent)
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
echo "== output writers at scale (go test -bench BenchmarkJUnitAtScale: 2,000 objects x 20 rules, 22,000 findings; JUnit / JSON in one run, goal <= 3x)"
$GO test -run '^$' -bench 'BenchmarkJUnitAtScale' -benchtime 3x ./output/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)'

echo
echo "== audit pass (go test -bench BenchmarkAuditPass; goals: 10,000 nodes x 500 drivers <= 2 s; report bytes grow with drivers, not nodes)"
audit_out=$($GO test -run '^$' -bench 'BenchmarkAuditPass' -benchtime 3x -benchmem ./audit/ 2>&1) || { echo "$audit_out" >&2; exit 1; }
echo "$audit_out" | grep -E '^Benchmark'
echo "$audit_out" | awk '/nodes=1000\// { for (i = 1; i <= NF; i++) if ($(i+1) == "report-bytes") small = $i }
	/nodes=10000\// { for (i = 1; i <= NF; i++) { if ($(i+1) == "report-bytes") large = $i; if ($(i+1) == "ns/op") ns = $i } }
	END { printf "10k x 500 pass: %.0f ms (goal <= 2000); report bytes 10k / 1k nodes: %.2fx (goal ~1: they grow with drivers)\n", ns / 1e6, large / small }'

echo
echo "== policy test suites (go test -bench BenchmarkTestSuite; goal: 200 cases over the library at 1,000 nodes <= 2 s)"
# cases=1 is the baseline: a one-case suite pays the policy compile and the inventory read
# alone; per-case ratio = (200-case suite / 200) / one-case suite (well below 1: paid once).
suite_out=$($GO test -run '^$' -bench 'BenchmarkTestSuite' -benchtime 3x -count "$RUNS" -benchmem ./action/ 2>&1) || { echo "$suite_out" >&2; exit 1; }
echo "$suite_out" | awk '
	function median(name,   n, i, j, v, a) {
		n = cnt[name]
		for (i = 1; i <= n; i++) a[i] = val[name, i]
		for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j+1] = a[j]; a[j+1] = v }
		return a[int((n + 1) / 2)]
	}
	/^BenchmarkTestSuite\// {
		name = $1; sub(/^BenchmarkTestSuite\//, "", name); sub(/-[0-9]+$/, "", name)
		k = ++cnt[name]
		for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") val[name, k] = $i + 0
	}
	END {
		one = median("nodes=1000/cases=1"); all = median("nodes=1000/cases=200")
		printf "one-case suite: %.0f ms; 200-case suite: %.0f ms (goal <= 2000: %s)\n", one / 1e6, all / 1e6, (all <= 2e9 ? "met" : "MISSED")
		if (one > 0) printf "per case in the 200-case suite / one-case suite: %.2fx\n", all / 200 / one
	}'

echo
echo "== plan at scale: plan.Make end to end, a tenth vs the full size (go test -bench BenchmarkPlan; median of $RUNS runs)"
echo "   goals: 10,000 nodes x 500 drivers x 50,000 pods x 2,000 PDBs <= 2 s; 10x the inputs <= ~12x the time"
plan_out=$($GO test -run '^$' -bench 'BenchmarkPlan$' -benchtime 3x -count "$RUNS" -benchmem ./plan/ 2>&1) || { echo "$plan_out" >&2; exit 1; }
echo "$plan_out" | awk '
	function median(name, unit,   n, i, j, v, a) {
		n = cnt[name]
		for (i = 1; i <= n; i++) a[i] = val[name, unit, i]
		for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j+1] = a[j]; a[j+1] = v }
		return a[int((n + 1) / 2)]
	}
	/^BenchmarkPlan\// {
		name = $1; sub(/^BenchmarkPlan\//, "", name); sub(/-[0-9]+$/, "", name)
		if (!(name in cnt)) order[++count] = name
		k = ++cnt[name]
		for (i = 2; i < NF; i++) if ($(i+1) == "ns/op" || $(i+1) == "B/op" || $(i+1) == "allocs/op") val[name, $(i+1), k] = $i + 0
	}
	END {
		printf "%-46s %14s %14s %12s\n", "size", "ns/op", "B/op", "allocs/op"
		for (i = 1; i <= count; i++) {
			k = order[i]; ns[k] = median(k, "ns/op"); b[k] = median(k, "B/op")
			printf "%-46s %14.0f %14.0f %12.0f\n", k, ns[k], b[k], median(k, "allocs/op")
		}
		s = "nodes=1000/drivers=50/pods=5000/pdbs=200"; l = "nodes=10000/drivers=500/pods=50000/pdbs=2000"
		if (l in ns) printf "(full size: %.2f s per plan, %.0f%% of the 2 s goal: %s)\n", ns[l] / 1e9, 100 * ns[l] / 2e9, (ns[l] <= 2e9 ? "met" : "MISSED")
		if ((s in ns) && (l in ns) && ns[s] > 0) printf "(10x the inputs: %.1fx the time, %.1fx the memory)\n", ns[l] / ns[s], b[l] / b[s]
	}'

echo
echo "== plan -o html at 10,000 nodes vs -o json of the same plan (go test -bench BenchmarkPlanHTML; median of $RUNS runs)"
echo "   goals: the page at most 2x the JSON's bytes and 2x its time"
html_out=$($GO test -run '^$' -bench 'BenchmarkPlanHTML$' -benchtime 3x -count "$RUNS" ./output/ 2>&1) || { echo "$html_out" >&2; exit 1; }
echo "$html_out" | awk '
	/^BenchmarkPlanHTML/ { n++; for (i = 2; i < NF; i++) { if ($(i+1) == "html/json-bytes") bytes[n] = $i + 0; if ($(i+1) == "html/json-time") tm[n] = $i + 0; if ($(i+1) == "html-bytes") hb = $i; if ($(i+1) == "json-bytes") jb = $i } }
	function median(a, n,   i, j, v) { for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j+1] = a[j]; a[j+1] = v } return a[int((n + 1) / 2)] }
	END {
		if (n == 0) { print "no BenchmarkPlanHTML result"; exit 1 }
		b = median(bytes, n); t = median(tm, n)
		printf "JSON %d bytes, HTML %d bytes: %.2fx the bytes (goal <= 2: %s)\n", jb, hb, b, (b <= 2 ? "met" : "MISSED")
		printf "HTML / JSON time: %.2fx (goal <= 2: %s)\n", t, (t <= 2 ? "met" : "MISSED")
	}'

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
for n in 12 10000; do
	us() { echo "$policy_out" | awk -v k="$1/nodes=$n" '$1 ~ "^BenchmarkEvaluate/"k"(-[0-9]+)?$" {printf "%.1f", $3/1000}'; }
	t=$(us trivial)
	l=$(us library)
	printf '%-10s %14s %14s %14s %8s\n' "$n" "$t" "$l" \
		"$(awk -v a="$l" -v b="$t" 'BEGIN{printf "%.1f", a-b}')" \
		"$(awk -v a="$l" -v b="$t" 'BEGIN{ if (b>0) printf "%.1fx", a/b; else print "n/a"}')"
done
echo "(µs per Evaluate: input conversion + query; 'library cost' is what the bundled rules add)"

echo
echo "== the webhook's handler per AdmissionReview, 3 checks vs the bundled library, 100 vs 10,000 nodes (µs/op)"
serve_out=$($GO test -run '^$' -bench 'BenchmarkServeHTTP$' -benchtime 2000x ./webhook/ 2>&1) || { echo "$serve_out" >&2; exit 1; }
echo "$serve_out" | awk '/^BenchmarkServeHTTP\// { name = $1; sub(/^BenchmarkServeHTTP\//, "", name); sub(/-[0-9]+$/, "", name); us[name] = $3 / 1000; order[++n] = name }
	END { for (i = 1; i <= n; i++) printf "%-44s %10.1f\n", order[i], us[order[i]]
		s = "nodes=100/drivers=10/3-checks"; l = "nodes=10000/drivers=500/library"
		if ((s in us) && (l in us)) printf "(library at 10,000 nodes / 3 checks at 100 nodes: %.2fx the cost)\n", us[l] / us[s] }'

echo
echo "== admission per request, the side-by-side harness's shape (go test -bench BenchmarkServeHTTPRack; medians of $RUNS runs, ratios in one run)"
echo "   goals (issue #35, as throughput, i.e. cost at 100 / cost at 10,000): library >= 0.95, 3 checks >= 0.95"
rack_out=$($GO test -run '^$' -bench 'BenchmarkServeHTTPRack$' -benchtime 2000x -count "$RUNS" ./webhook/ 2>&1) || { echo "$rack_out" >&2; exit 1; }
echo "$rack_out" | awk '/^BenchmarkServeHTTPRack\// { name = $1; sub(/^BenchmarkServeHTTPRack\//, "", name); sub(/-[0-9]+$/, "", name)
		k = ++cnt[name]; ns[name, k] = $3; for (i = 2; i < NF; i++) if ($(i+1) == "allocs/op") al[name] = $i; if (k == 1) order[++n] = name }
	function med(name,   m, i, j, t, a) { m = cnt[name]; for (i = 1; i <= m; i++) a[i] = ns[name, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((m + 1) / 2)] }
	END { for (i = 1; i <= n; i++) printf "%-40s %10.1f us %8d allocs\n", order[i], med(order[i]) / 1000, al[order[i]]
		for (s = 1; s <= 2; s++) { set = (s == 1) ? "3-checks" : "library"
			a = "nodes=100/drivers=10/" set; b = "nodes=10000/drivers=500/" set
			if ((a in cnt) && (b in cnt)) printf "%-10s 10,000 / 100 nodes (throughput ratio): %.2f\n", set, med(a) / med(b) } }'
echo "-- the pieces: one-pass conversion vs OPA's, and cut to what the three checks read (BenchmarkObjectValue);"
echo "   json/v2-first vs sigs.k8s.io/json (BenchmarkDecodeJSON); a valid driver's validation (BenchmarkValidateDriver)"
pieces_out=$({ $GO test -run '^$' -bench 'BenchmarkObjectValue$' -count "$RUNS" ./policy/ && $GO test -run '^$' -bench 'BenchmarkDecodeJSON$' -count "$RUNS" ./webhook/ &&
	$GO test -run '^$' -bench 'BenchmarkValidateDriver$' -count "$RUNS" ./api/validation/; } 2>&1) || { echo "$pieces_out" >&2; exit 1; }
echo "$pieces_out" | awk '/^Benchmark(ObjectValue|DecodeJSON|ValidateDriver)[\/-]/ { name = $1; sub(/-[0-9]+$/, "", name); k = ++cnt[name]; ns[name, k] = $3; for (i = 2; i < NF; i++) if ($(i+1) == "allocs/op") al[name] = $i }
	function med(name,   m, i, j, t, a) { m = cnt[name]; for (i = 1; i <= m; i++) a[i] = ns[name, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((m + 1) / 2)] }
	END { n = split("BenchmarkObjectValue/one-pass BenchmarkObjectValue/opa BenchmarkObjectValue/one-pass-three-paths BenchmarkDecodeJSON/decodeJSON BenchmarkDecodeJSON/sigs.k8s.io-json BenchmarkValidateDriver", names, " ")
		for (i = 1; i <= n; i++) printf "%-44s %8.1f us %6d allocs\n", names[i], med(names[i]) / 1000, al[names[i]]
		printf "one-pass / OPA conversion: %.2fx the time; cut to three paths / whole: %.2fx; decodeJSON / sigs.k8s.io/json: %.2fx\n",
			med(names[1]) / med(names[2]), med(names[3]) / med(names[1]), med(names[4]) / med(names[5]) }'

echo "== check and policy input at scale: N instances against 10,000 nodes (wall s, peak RSS MiB)"
gen_nodes() {
	local n=$1 i
	for ((i = 0; i < n; i++)); do
		printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%05d\n  labels:\n    rebellions.ai/npu.deploy.driver: "true"\n    rebellions.ai/npu.family: fam%d\n    pool: p%d\n    feature.node.kubernetes.io/kernel-version.full: "6.8.0-90-generic"\n    feature.node.kubernetes.io/system-os_release.ID: ubuntu\n    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"\n    kubernetes.io/hostname: node-%05d\n' \
			"$i" $((i % 7)) $((i % 2000)) "$i"
	done >"$work/nodes-$n.yaml"
}
gen_nodes 10000
# wall seconds and peak RSS (MiB, with GNU time) of one run; exit 1 (a finding) is a result
measure() {
	local start end rss=n/a
	start=$(now_ns)
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%M' -o "$work/rss" "$@" >/dev/null 2>&1 || [ $? -eq 1 ]
		rss=$(($(cat "$work/rss") / 1024))
	else
		"$@" >/dev/null 2>&1 || [ $? -eq 1 ]
	fi
	end=$(now_ns)
	awk -v ns=$((end - start)) -v rss="$rss" 'BEGIN{printf "%.2f %s", ns/1e9, rss}'
}
printf '%-14s %10s %10s %10s %10s\n' command instances "wall s" "RSS MiB" "x (1,000)"
for cmd in check "policy input"; do
	base=
	for n in 1000 2000; do
		[ -f "$work/values-$n.yaml" ] || gen_values "$n"
		# shellcheck disable=SC2086 # cmd is two words for policy input
		read -r t rss <<<"$(measure "$DG" $cmd -f "$work/values-$n.yaml" --nodes "$work/nodes-10000.yaml")"
		[ -n "$base" ] || base=$t
		printf '%-14s %10s %10s %10s %10s\n' "$cmd" "$n" "$t" "$rss" "$(awk -v a="$t" -v b="$base" 'BEGIN{printf "%.2fx", a/b}')"
	done
done
echo "(goals: check of 1,000 instances <= 3 s and <= 500 MiB, doubling <= 2.3x; policy input of 1,000 <= 300 MiB)"

echo
echo "== serve's resident memory at 10,000 nodes (real kube-apiserver + etcd, serve as its own process)"
bash hack/tools.sh control-plane >&2
$GO run ./hack/servemem -bin "$DG" -assets bin -crds config/crd/bases -nodes 10000 -drivers 500
echo "== the same with the audit running (goals: peak <= 200 MiB, audit adds <= 32 MiB; relabel -> report p99 <= 2 s; a burst writes a report at most once a second)"
$GO run ./hack/servemem -bin "$DG" -assets bin -crds config/crd/bases -nodes 10000 -drivers 500 -audit -load 30s

PERF_DIR=${PERF_DIR:-hack/perf}
echo
if [ -x "$PERF_DIR/run.sh" ] || [ -f "$PERF_DIR/run.sh" ]; then
	echo "== admission side by side with OPA's server ($PERF_DIR/run.sh)"
	bash "$PERF_DIR/run.sh" . | tee "$work/perf.txt"
	awk '
		/^== 100 nodes/ { scale = "small" } /^== 10000 nodes/ { scale = "large" } /^== anchor/ { scale = "opa" }
		/c=8/ && /rps=/ { match($0, /rps=[0-9]+/); r = substr($0, RSTART + 4, RLENGTH - 4)
			if (scale == "opa") opa = r; else if ($0 ~ /lib off/) three[scale] = r; else if ($0 ~ /bundled library c=8/) lib[scale] = r }
		/@1000rps/ { match($0, /p99=[0-9.]+/); p = substr($0, RSTART + 4, RLENGTH - 4)
			if (scale == "opa") opa99 = p; else if ($0 ~ /bundled library @/ && scale == "large") lib99 = p }
		END {
			printf "100x10 3 checks / OPA:            %.2fx (goal >= 1.0)\n", three["small"] / opa
			printf "10k x 500 3 checks / 100x10:      %.2fx (goal >= 0.8)\n", three["large"] / three["small"]
			printf "10k x 500 library / 100x10 3chk:  %.2fx (goal >= 0.5)\n", lib["large"] / three["small"]
			printf "10k x 500 library p99 / OPA p99:  %.2fx at 1,000 req/s (goal <= 2)\n", lib99 / opa99
		}' "$work/perf.txt"
else
	echo "== admission side by side with OPA's server: skipped ($PERF_DIR/run.sh not found; set PERF_DIR)"
fi

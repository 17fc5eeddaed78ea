#!/usr/bin/env bash
# The scale benchmark of issue #45 (make bench-scale; docs/development.md "Scale benchmark"): a
# real kube-apiserver and etcd (bin/, envtest) holding NODES Nodes labelled as a real fleet's
# (~60 labels and the usual annotations: hack/perf/envup -labels fleet) and DRIVERS RBLNDrivers,
# a second one holding 100 such nodes and 10 drivers (the baseline), both up at once; then
# hack/servemem -large-kubeconfig prints the four figures with their goals:
#   1. serve --audit --memory-limit 256Mi (the chart's args): time to Ready, peak RSS (VmHWM);
#   2. the admission rate at NODES / at 100 nodes, paired rounds (median and spread);
#   3. driverguard audit --kubeconfig at NODES: wall time and peak RSS.
#   NODES=100000 DRIVERS=1000 ROUNDS=3 LOAD=8s MEMORY_LIMIT=256Mi bash hack/bench-scale.sh
# A benchmark, not a test: it fails only when something could not run, never on a missed goal.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-100000} DRIVERS=${DRIVERS:-1000} ROUNDS=${ROUNDS:-3} LOAD=${LOAD:-8s} MEMORY_LIMIT=${MEMORY_LIMIT:-256Mi}
SMALL_NODES=100 SMALL_DRIVERS=10
GO=${GO:-go}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

bash hack/tools.sh control-plane >&2
# serve and audit as the image builds them (cgo off, -trimpath)
CGO_ENABLED=0 $GO build -trimpath -o "$work/driverguard" ./cmd/driverguard
$GO build -o "$work/envup" ./hack/perf/envup
$GO build -o "$work/servemem" ./hack/servemem

up() { # name nodes drivers
  KUBEBUILDER_ASSETS="$PWD/bin" "$work/envup" -labels fleet -nodes "$2" -drivers "$3" -workers 64 \
    -crds config/crd/bases -report-crd charts/driverguard/crds/openreports.io_clusterreports.yaml \
    -out "$work/$1.kubeconfig" >"$work/$1.envup.log" 2>&1 &
  pids+=($!)
}
echo "== creating the clusters: $NODES nodes x $DRIVERS RBLNDrivers, and $SMALL_NODES x $SMALL_DRIVERS (fleet labels)"
start=$(date +%s)
up small $SMALL_NODES $SMALL_DRIVERS
up large "$NODES" "$DRIVERS"
for c in small large; do
  # about 1,000 nodes a second on 2 cores; give it twenty times that
  for _ in $(seq 1 $((NODES / 10 + 600))); do
    grep -q '^ready' "$work/$c.envup.log" && break
    kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null || break
    sleep 0.2
  done
  grep -q '^ready' "$work/$c.envup.log" || { echo "envup ($c) did not come up:" >&2; cat "$work/$c.envup.log" >&2; exit 1; }
done
sed -n 's/^ready /   /p' "$work/large.envup.log"
echo "   (both clusters up in $(($(date +%s) - start)) s)"

echo "== measuring (serve --audit --memory-limit $MEMORY_LIMIT as the chart runs it; $ROUNDS paired rounds of $LOAD)"
"$work/servemem" -bin "$work/driverguard" -large-kubeconfig "$work/large.kubeconfig" -small-kubeconfig "$work/small.kubeconfig" \
  -small-size "$SMALL_NODES nodes" -nodes "$NODES" -drivers "$DRIVERS" -rounds "$ROUNDS" -load "$LOAD" \
  -memory-limit "$MEMORY_LIMIT" -body hack/perf/driver-create.json

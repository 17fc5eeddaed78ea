#!/usr/bin/env bash
# Side-by-side admission throughput/latency: driverguard serve (TLS, real kube-apiserver state)
# vs `opa run --server` (plain HTTP) on the same three checks, in one run, same load generator.
#   hack/perf/run.sh [PROJECT_CLONE] [SCALES]   SCALES default "100:10 10000:500" (nodes:drivers)
# PROJECT_CLONE (default: this repository) must have bin/kube-apiserver, bin/etcd (make tools). Prints one row per case.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proj=$(cd "${1:-$here/../..}" && pwd)
scales=${2:-"100:10 10000:500"}
D=${D:-10s}
work=$(mktemp -d)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dg-perf
mkdir -p "$cache"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

(cd "$here/load" && go build -o "$cache/load" .)
(cd "$proj" && go build -o "$cache/driverguard" ./cmd/driverguard)
if [ -f "$proj/hack/perf/envup/main.go" ]; then
  (cd "$proj" && go build -o "$cache/envup" ./hack/perf/envup)
else # a clone without hack/perf: build this envup with the clone's go.mod
  mkdir -p "$proj/hack/perf-envup" && cp "$here/envup/main.go" "$proj/hack/perf-envup/main.go"
  (cd "$proj" && go build -o "$cache/envup" ./hack/perf-envup)
  rm -rf "$proj/hack/perf-envup"
fi
[ -x "$cache/opa" ] || GOBIN="$cache" GOFLAGS=-mod=mod go install github.com/open-policy-agent/opa@v1.22.3
DG=$cache/driverguard LOAD=$cache/load

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" -out "$work/tls.crt" -days 1 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
lib_off=$("$DG" policy list -o json | python3 -c 'import json,sys; print(" ".join("--disable="+p["name"] for p in json.load(sys.stdin)))')

wait_http() { for _ in $(seq 1 300); do curl -fsk "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done; echo "timeout waiting for $1" >&2; return 1; }

serve() { # label, extra flags...; runs load cases against a fresh serve
  local label=$1; shift
  "$DG" serve --kubeconfig "$work/kubeconfig" --cert-dir "$work" --port 9443 --host 127.0.0.1 \
    --metrics-addr 127.0.0.1:18080 --health-addr 127.0.0.1:18081 --log-level error "$@" 2>"$work/serve.log" &
  local sp=$!; pids+=($sp)
  wait_http http://127.0.0.1:18081/readyz || { cat "$work/serve.log" >&2; exit 1; }
  "$LOAD" -url https://127.0.0.1:9443/validate-rbln-driver -body "$here/driver-create.json" -c 8 -d "$D" -expect '"allowed":true' -label "$label c=8"
  "$LOAD" -url https://127.0.0.1:9443/validate-rbln-driver -body "$here/driver-create.json" -c 8 -d "$D" -rps 1000 -expect '"allowed":true' -label "$label @1000rps"
  if [ -n "${EXTRA_BODY:-}" ]; then
    "$LOAD" -url https://127.0.0.1:9443/validate-rbln-driver -body "$EXTRA_BODY" -c 8 -d "$D" -expect '"allowed":true' -label "$label (extra body) c=8"
  fi
  if [ "${DS:-1}" = 1 ] && [ "$label" = "dg bundled library" ]; then
    "$LOAD" -url https://127.0.0.1:9443/mutate-driver-daemonset -body "$here/daemonset-create.json" -c 8 -d "$D" -expect '"patch"' -label "dg DaemonSet mutation c=8"
  fi
  kill $sp; wait $sp 2>/dev/null || true
}

for s in $scales; do
  n=${s%%:*} m=${s##*:}
  echo "== $n nodes, $m drivers (real kube-apiserver + etcd; driverguard serve over TLS 1.3)"
  KUBEBUILDER_ASSETS="$proj/bin" "$cache/envup" -nodes "$n" -drivers "$m" -crds "$proj/config/crd/bases" -out "$work/kubeconfig" >"$work/envup.log" 2>&1 &
  ep=$!; pids+=($ep)
  for _ in $(seq 1 900); do grep -q ready "$work/envup.log" && break; sleep 0.2; done
  grep -q ready "$work/envup.log" || { cat "$work/envup.log" >&2; exit 1; }
  serve "dg 3-rule policy (lib off)" --policy-dir "$here/policy3" $lib_off
  serve "dg bundled library" 
  serve "dg bundled library + 3-rule" --policy-dir "$here/policy3"
  kill $ep; wait $ep 2>/dev/null || true
done

echo "== anchor: opa run --server (plain HTTP), same three checks"
"$cache/opa" run --server --addr 127.0.0.1:18181 --log-level error "$here/opa3" >/dev/null 2>&1 &
op=$!; pids+=($op)
wait_http http://127.0.0.1:18181/health
"$LOAD" -url http://127.0.0.1:18181/v1/data/driverguard/perf/deny -body "$here/opa-input.json" -c 8 -d "$D" -expect '"result"' -label "opa server c=8"
"$LOAD" -url http://127.0.0.1:18181/v1/data/driverguard/perf/deny -body "$here/opa-input.json" -c 8 -d "$D" -rps 1000 -expect '"result"' -label "opa server @1000rps"

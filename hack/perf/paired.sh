#!/usr/bin/env bash
# Paired admission benchmark: the ratios of run.sh, measured so that machine drift cancels out.
# Both cluster sizes are up at once (two real kube-apiservers + etcd), four `driverguard serve`
# processes (3 checks and the bundled library, at each size) and OPA's own server run side by
# side, and the closed-loop cases are measured in turn, round after round (A B C D E, A B C D E, …).
# Each ratio is taken within a round; the median over the rounds is printed with its spread.
#   hack/perf/paired.sh [PROJECT_CLONE] [ROUNDS] [SMALL] [LARGE]   defaults: this repository, 3 rounds,
#   100:10, 10000:500. PROJECT_CLONE must have bin/kube-apiserver and bin/etcd (make tools).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proj=$(cd "${1:-$here/../..}" && pwd)
rounds=${2:-3} small=${3:-100:10} large=${4:-10000:500}
D=${D:-8s}
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
wait_http() { for _ in $(seq 1 600); do curl -fsk "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done; echo "timeout waiting for $1" >&2; return 1; }

up() { # name nodes:drivers
  local n=${2%%:*} m=${2##*:}
  KUBEBUILDER_ASSETS="$proj/bin" "$cache/envup" -nodes "$n" -drivers "$m" -crds "$proj/config/crd/bases" -out "$work/$1.kubeconfig" >"$work/$1.envup.log" 2>&1 &
  pids+=($!)
}
up small "$small"; up large "$large"
for c in small large; do
  for _ in $(seq 1 1500); do grep -q ready "$work/$c.envup.log" && break; sleep 0.2; done
  grep -q ready "$work/$c.envup.log" || { cat "$work/$c.envup.log" >&2; exit 1; }
done

i=0
serve() { # cluster, extra flags... ; prints the port
  i=$((i + 1))
  "$DG" serve --kubeconfig "$work/$1.kubeconfig" --cert-dir "$work" --port $((9442 + i)) --host 127.0.0.1 \
    --metrics-addr 127.0.0.1:$((18180 + 2 * i)) --health-addr 127.0.0.1:$((18181 + 2 * i)) --log-level error "${@:2}" 2>"$work/serve$i.log" &
  pids+=($!)
  wait_http http://127.0.0.1:$((18181 + 2 * i))/readyz >&2 || { cat "$work/serve$i.log" >&2; exit 1; }
}
serve small --policy-dir "$here/policy3" $lib_off   # 9443
serve large --policy-dir "$here/policy3" $lib_off   # 9444
serve small                                        # 9445
serve large                                        # 9446
"$cache/opa" run --server --addr 127.0.0.1:18181 --log-level error "$here/opa3" >/dev/null 2>&1 &
pids+=($!)
wait_http http://127.0.0.1:18181/health

rps() { "$LOAD" "$@" -c 8 -d "$D" | sed -n 's/.* rps=\([0-9]*\) .*/\1/p'; }
echo "round opa dg3_small dg3_large lib_small lib_large"
for r in $(seq 1 "$rounds"); do
  a=$(rps -url http://127.0.0.1:18181/v1/data/driverguard/perf/deny -body "$here/opa-input.json" -expect '"result"')
  b=$(rps -url https://127.0.0.1:9443/validate-rbln-driver -body "$here/driver-create.json" -expect '"allowed":true')
  c=$(rps -url https://127.0.0.1:9444/validate-rbln-driver -body "$here/driver-create.json" -expect '"allowed":true')
  d=$(rps -url https://127.0.0.1:9445/validate-rbln-driver -body "$here/driver-create.json" -expect '"allowed":true')
  e=$(rps -url https://127.0.0.1:9446/validate-rbln-driver -body "$here/driver-create.json" -expect '"allowed":true')
  echo "$r $a $b $c $d $e"
done | tee "$work/rounds.txt"
python3 - "$work/rounds.txt" "$small" "$large" <<'PY'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1]) if l[0].isdigit()]
small, large = sys.argv[2], sys.argv[3]
def show(name, f):
    v = sorted(f(r) for r in rows)
    print(f"ratio {name:<38} median={statistics.median(v):.2f} min={v[0]:.2f} max={v[-1]:.2f}")
show("3 checks small / OPA", lambda r: r[1] / r[0])
show("3 checks large / small", lambda r: r[2] / r[1])
show("library large / library small", lambda r: r[4] / r[3])
show("library large / OPA", lambda r: r[4] / r[0])
print(f"(small={small}, large={large}, {len(rows)} rounds; req/s medians: opa {statistics.median(r[0] for r in rows):.0f}, "
      f"3 checks {statistics.median(r[1] for r in rows):.0f} / {statistics.median(r[2] for r in rows):.0f}, "
      f"library {statistics.median(r[3] for r in rows):.0f} / {statistics.median(r[4] for r in rows):.0f})")
PY

#!/usr/bin/env bash
# Builds the project's tool binaries into bin/ (git-ignored) and reuses them when current.
#
#   hack/tools.sh helm            helm v3.22.0 as bin/helm and helm v4.3.1 as bin/helm4 (helm lint,
#                                 the differential and lifecycle tests run both)
#   hack/tools.sh control-plane   kube-apiserver v1.37.2, its disruption controller alone
#                                 (hack/tools/disruption-controller; test/plan runs it) and
#                                 etcd v3.7.3 (KUBEBUILDER_ASSETS=bin)
#   hack/tools.sh kubectl         kubectl v1.37.2 (test/docs runs the docs' kubectl commands)
#   hack/tools.sh lint            golangci-lint (hack/lint/go.mod pins it; make lint)
#   hack/tools.sh browser         Debian's chromium (apt-get install when missing) and npm's
#                                 mermaid $MERMAID_VERSION as bin/mermaid.min.js (test/picture
#                                 renders plan -o html and the ticket's gantt in them)
#   hack/tools.sh all             all of them
#
# Nothing can be downloaded as a release binary here, so everything is built from Go modules,
# each tool in the module whose compiled packages it shares most (Go's build cache shares a
# package between builds with the same version, flags and -trimpath, whichever module asks):
#   - helm v3 in the main module (go.mod's tool directive): the same helm.sh/helm/v3,
#     Kubernetes and template modules driverguard links, compiled once for both;
#   - kube-apiserver, the disruption controller (hack/tools/disruption-controller), helm v4 and
#     kubectl in hack/tools (its go.mod's tool directives): one compile of the Kubernetes libraries;
#   - etcd in hack/etcd, golangci-lint in hack/lint.
# So a tool's dependencies are the ones its module selects, not always the release's own pins:
# patch and minor upgrades (docs/development.md lists them); the tool's own source, version and
# Kubernetes line are the release's. The modules are separate from the main module's ./....
# Every tool is built with cgo off, as their releases are (and as driverguard's image is).
# Builds in different modules run at the same time (two cores rarely both busy in one build).
#
# Two levels of reuse:
#   1. bin/.<tool>.stamp holds the build key (everything that determines the binary: version,
#      ldflags, sha256 of its module's go.mod/go.sum, Go version, GOOS/GOARCH, CGO_ENABLED).
#      If it matches and bin/<tool> exists, nothing is done.
#   2. A machine-wide cache, ${XDG_CACHE_HOME:-$HOME/.cache}/driverguard/bin/<tool>-<hash of key>/,
#      holds finished builds, so a fresh clone on the same machine only hardlinks (or copies) them.
# docs/development.md gives the measured cold times; everything warm takes seconds.
# Note: Go's own build cache also lives under XDG_CACHE_HOME (unless GOCACHE is set), so pointing
# XDG_CACHE_HOME somewhere new means cold Go builds too.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/bin"
CACHE="${XDG_CACHE_HOME:-${HOME:?set HOME or XDG_CACHE_HOME}/.cache}/driverguard/bin"
GO="${GO:-go}"
# The tools modules are standalone; a go.work somewhere above must not pull them in.
export GOWORK=off
# Every tool is a static binary, as released (see above).
export CGO_ENABLED=0

HELM_VERSION=v3.22.0
HELM4_VERSION=v4.3.1
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
MERMAID_VERSION=12.3.0

BUILD_TMP=""
CHAINS=()
cleanup() {
	if [[ -n "$BUILD_TMP" ]]; then rm -rf "$BUILD_TMP"; fi
}
# On a signal the builds running in the background stop too.
stop() {
	if [[ ${#CHAINS[@]} -gt 0 ]]; then kill "${CHAINS[@]}" 2>/dev/null || true; fi
	exit "$1"
}
trap cleanup EXIT
trap 'stop 130' INT
trap 'stop 143' TERM

log() { printf 'tools.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

sha() { sha256sum "$@" | cut -d' ' -f1; }

# Toolchain facts that change the produced binary, as seen from DIR (a go.mod there could select
# another toolchain).
toolchain_key() { # DIR
	(cd "$1" && "$GO" env GOVERSION GOOS GOARCH GOAMD64 CGO_ENABLED GOEXPERIMENT GOFLAGS) |
		paste -sd'|' | sed 's/^/toolchain=/'
}

# ensure NAME KEY BUILD_FN CHECK_FN
#   Makes bin/NAME current for KEY. BUILD_FN OUTDIR must build OUTDIR/NAME; CHECK_FN BINARY
#   checks a fresh build (e.g. the version it reports) before it goes into the cache.
ensure() {
	local name="$1" key="$2" build_fn="$3" check_fn="$4"
	local stamp="$BIN/.$name.stamp" dest="$BIN/$name"
	local hash entry lockfd
	hash="$(printf '%s' "$key" | sha256sum | cut -c1-16)"
	entry="$CACHE/$name-$hash"

	if [[ -x "$dest" && -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
		log "$name: up to date (bin/$name, key $hash)"
		return 0
	fi

	mkdir -p "$BIN" "$CACHE"
	# One builder per cache entry across all clones on this machine.
	exec {lockfd}>"$entry.lock"
	if ! flock -n "$lockfd"; then
		log "$name: another build of key $hash is running; waiting for it"
		flock "$lockfd"
	fi

	if [[ -f "$entry/$name" && -f "$entry/sha256" ]]; then
		if [[ "$(sha "$entry/$name")" == "$(cat "$entry/sha256")" ]]; then
			log "$name: reusing machine cache $entry"
		else
			log "$name: cache entry $entry is corrupt; rebuilding"
			rm -rf "$entry"
		fi
	fi

	if [[ ! -f "$entry/$name" ]]; then
		local tmp start
		# Leftovers of an interrupted build of this key (we hold its lock, so none is running).
		rm -rf "$CACHE/.$name-$hash".*
		tmp="$(mktemp -d "$CACHE/.$name-$hash.XXXXXX")"
		BUILD_TMP="$tmp"
		start=$SECONDS
		log "$name: building (key $hash) ..."
		if ! "$build_fn" "$tmp"; then
			rm -rf "$tmp"
			die "$name: build failed"
		fi
		[[ -x "$tmp/$name" ]] || { rm -rf "$tmp"; die "$name: build produced no $tmp/$name"; }
		if ! "$check_fn" "$tmp/$name"; then
			rm -rf "$tmp"
			die "$name: the fresh build failed its check"
		fi
		sha "$tmp/$name" >"$tmp/sha256"
		printf '%s\n' "$key" >"$tmp/key"
		rm -rf "$entry"
		mv -T "$tmp" "$entry"
		BUILD_TMP=""
		log "$name: built in $((SECONDS - start))s into $entry"
	fi

	# Hardlink into bin/ (falls back to a copy across filesystems); replace atomically so a
	# running binary or an old hardlink is never written through.
	rm -f "$dest.tmp.$$"
	ln "$entry/$name" "$dest.tmp.$$" 2>/dev/null || cp "$entry/$name" "$dest.tmp.$$"
	mv -f "$dest.tmp.$$" "$dest"
	printf '%s' "$key" >"$stamp"
	exec {lockfd}>&-
	log "$name: installed bin/$name"
}

# --- helm -------------------------------------------------------------------------------------
HELM_PKG=helm.sh/helm/v3
HELM_LDFLAGS="-s -w -X $HELM_PKG/internal/version.version=$HELM_VERSION \
-X $HELM_PKG/pkg/lint/rules.k8sVersionMajor=1 -X $HELM_PKG/pkg/lint/rules.k8sVersionMinor=37 \
-X $HELM_PKG/pkg/chartutil.k8sVersionMajor=1 -X $HELM_PKG/pkg/chartutil.k8sVersionMinor=37"

build_helm() {
	(cd "$ROOT" && "$GO" build -trimpath -ldflags "$HELM_LDFLAGS" -o "$1/helm" "$HELM_PKG/cmd/helm")
}

# expect_version BINARY WANT ARGS...: BINARY ARGS... must print WANT.
expect_version() {
	local bin="$1" want="$2" out
	shift 2
	out="$("$bin" "$@" 2>&1)" || true
	if [[ "$out" != *"$want"* ]]; then
		log "$(basename "$bin") $* printed '$out', expected it to contain '$want'"
		return 1
	fi
}

check_helm() { expect_version "$1" "$HELM_VERSION" version --short; }

# helm v4 derives the Kubernetes version it assumes from its client-go (v1.37): only its own
# version is set.
HELM4_PKG=helm.sh/helm/v4
HELM4_LDFLAGS="-s -w -X $HELM4_PKG/internal/version.version=$HELM4_VERSION"

build_helm4() {
	(cd "$ROOT/hack/tools" && "$GO" build -trimpath -ldflags "$HELM4_LDFLAGS" -o "$1/helm4" "$HELM4_PKG/cmd/helm")
}

check_helm4() { expect_version "$1" "$HELM4_VERSION" version --short; }

tool_helm() {
	local key
	key="$(printf 'tool=helm\nversion=%s\nldflags=%s\n%s\n%s' "$HELM_VERSION" "$HELM_LDFLAGS" \
		"$(module_key "$ROOT")" "$(toolchain_key "$ROOT")")"
	ensure helm "$key" build_helm check_helm
}

tool_helm4() {
	local key
	key="$(printf 'tool=helm4\nversion=%s\nldflags=%s\n%s\n%s' "$HELM4_VERSION" "$HELM4_LDFLAGS" \
		"$(module_key "$ROOT/hack/tools")" "$(toolchain_key "$ROOT/hack/tools")")"
	ensure helm4 "$key" build_helm4 check_helm4
}

# --- kube-apiserver, the disruption controller (hack/tools module) --------------------------
K8S_LDFLAGS="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	K8S_LDFLAGS="$K8S_LDFLAGS -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37"
	K8S_LDFLAGS="$K8S_LDFLAGS -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done

build_kube_apiserver() {
	(cd "$ROOT/hack/tools" && "$GO" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$1/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
}

build_disruption_controller() {
	(cd "$ROOT/hack/tools" && "$GO" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$1/disruption-controller" ./disruption-controller)
}

build_etcd() {
	(cd "$ROOT/hack/etcd" && "$GO" build -trimpath -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3)
}

build_kubectl() {
	(cd "$ROOT/hack/tools" && "$GO" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$1/kubectl" k8s.io/kubernetes/cmd/kubectl)
}

check_kube_apiserver() { expect_version "$1" "Kubernetes $K8S_VERSION" --version; }
check_disruption_controller() { expect_version "$1" "Kubernetes $K8S_VERSION" --version; }
check_kubectl() { expect_version "$1" "Client Version: $K8S_VERSION" version --client; }
check_etcd() { expect_version "$1" "etcd Version: ${ETCD_VERSION#v}" --version; }

module_key() { # DIR
	printf 'go.mod=%s\ngo.sum=%s\n' "$(sha "$1/go.mod")" "$(sha "$1/go.sum")"
}

tool_kube_apiserver() {
	local key
	key="$(printf 'tool=kube-apiserver\nversion=%s\nldflags=%s\n%s\n%s' "$K8S_VERSION" "$K8S_LDFLAGS" \
		"$(module_key "$ROOT/hack/tools")" "$(toolchain_key "$ROOT/hack/tools")")"
	ensure kube-apiserver "$key" build_kube_apiserver check_kube_apiserver
}

tool_disruption_controller() {
	local key
	key="$(printf 'tool=disruption-controller\nversion=%s\nldflags=%s\nmain=%s\n%s\n%s' "$K8S_VERSION" "$K8S_LDFLAGS" \
		"$(sha "$ROOT/hack/tools/disruption-controller/main.go")" "$(module_key "$ROOT/hack/tools")" "$(toolchain_key "$ROOT/hack/tools")")"
	ensure disruption-controller "$key" build_disruption_controller check_disruption_controller
}

tool_kubectl() {
	local key
	key="$(printf 'tool=kubectl\nversion=%s\nldflags=%s\n%s\n%s' "$K8S_VERSION" "$K8S_LDFLAGS" \
		"$(module_key "$ROOT/hack/tools")" "$(toolchain_key "$ROOT/hack/tools")")"
	ensure kubectl "$key" build_kubectl check_kubectl
}

tool_etcd() {
	local key
	key="$(printf 'tool=etcd\nversion=%s\nldflags=-s -w\n%s\n%s' "$ETCD_VERSION" \
		"$(module_key "$ROOT/hack/etcd")" "$(toolchain_key "$ROOT/hack/etcd")")"
	ensure etcd "$key" build_etcd check_etcd
}

# --- kube-apiserver of another Kubernetes release (make test-matrix) ---------------------------
# kube-apiserver@vX.Y.Z builds that release's API server into bin/k8s/vX.Y.Z/ (beside a link to
# bin/etcd): from a module of its own, generated in the cache, that requires k8s.io/kubernetes at
# the release and each of its staging modules at the matching v0.Y.Z (as the hack/tools module
# does for K8S_VERSION).
k8s_module() { # VERSION: prints the module's directory
	local v="$1" dir="$CACHE/k8s-module-$1" gomod sv="v0.${1#v1.}"
	if [[ ! -f "$dir/go.sum" ]]; then
		mkdir -p "$dir"
		gomod="$(cd "$dir" && GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
		[[ -f "$gomod" ]] || die "kube-apiserver@$v: the Go module proxy has no k8s.io/kubernetes $v"
		{
			printf 'module driverguard.local/k8s-%s\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$v" "$("$GO" env GOVERSION | sed 's/^go//')" "$v"
			grep -E '^\s+k8s.io/[a-z-]+ => ./staging' "$gomod" | awk -v sv="$sv" '{printf "\t%s => %s %s\n", $1, $1, sv}'
			printf ')\n'
		} >"$dir/go.mod"
		printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$dir/tools.go"
		(cd "$dir" && GOFLAGS=-mod=mod "$GO" mod tidy) >&2 || die "kube-apiserver@$v: resolving its modules failed"
	fi
	printf '%s\n' "$dir"
}

tool_kube_apiserver_at() { # VERSION
	local v="$1" dir key minor ldflags="-s -w" p
	[[ "$v" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "kube-apiserver@$v: give a release, e.g. kube-apiserver@v1.32.13"
	minor="${BASH_REMATCH[1]}"
	dir="$(k8s_module "$v")"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
	done
	key="$(printf 'tool=kube-apiserver\nversion=%s\nldflags=%s\n%s\n%s' "$v" "$ldflags" "$(module_key "$dir")" "$(toolchain_key "$dir")")"
	build_at() { (cd "$dir" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$1/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver); }
	check_at() { expect_version "$1" "Kubernetes $v" --version; }
	BIN="$ROOT/bin/k8s/$v" ensure kube-apiserver "$key" build_at check_at
	ln -sfn ../../etcd "$ROOT/bin/k8s/$v/etcd"
}

# --- golangci-lint (hack/lint module) ---------------------------------------------------------
build_golangci_lint() {
	(cd "$ROOT/hack/lint" && "$GO" build -trimpath -ldflags "-s -w" -o "$1/golangci-lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
}

check_golangci_lint() { expect_version "$1" "golangci-lint has version" version; }

tool_golangci_lint() {
	local key
	key="$(printf 'tool=golangci-lint\nldflags=-s -w\n%s\n%s' "$(module_key "$ROOT/hack/lint")" "$(toolchain_key "$ROOT/hack/lint")")"
	ensure golangci-lint "$key" build_golangci_lint check_golangci_lint
}

# --- the browser: Debian's chromium, npm's mermaid ----------------------------------------------
# Not Go modules: chromium is Debian's package (apt-get install, as root or with sudo), mermaid
# npm's package installed with npm into the machine-wide cache (never a CDN: the tests load it
# from bin/mermaid.min.js). Either failing stops the run: the browser tests cannot run without.
apt_install() { # PACKAGE...
	local sudo=""
	if [[ "$(id -u)" != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "installing $*: not root and no sudo; install Debian's $* yourself"
		sudo="sudo"
	fi
	log "installing $* with apt-get"
	$sudo apt-get update -q >&2 || die "apt-get update failed (installing $*)"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@" >&2 || die "apt-get install -y $* failed"
}

tool_chromium() {
	if ! command -v chromium >/dev/null 2>&1; then
		apt_install chromium
	fi
	local v
	v="$(chromium --version 2>/dev/null)" || die "chromium is installed but 'chromium --version' fails"
	[[ "$v" == Chromium* ]] || die "chromium --version printed '$v', expected Debian's Chromium"
	log "chromium: $v ($(command -v chromium))"
}

tool_mermaid() {
	local entry="$CACHE/../npm/mermaid-$MERMAID_VERSION" file=node_modules/mermaid/dist/mermaid.min.js lockfd tmp
	mkdir -p "$BIN" "$(dirname "$entry")"
	exec {lockfd}>"$entry.lock"
	flock "$lockfd"
	if [[ ! -s "$entry/$file" ]]; then
		command -v npm >/dev/null 2>&1 || apt_install npm
		tmp="$(mktemp -d "$entry.XXXXXX")"
		log "mermaid: npm install mermaid@$MERMAID_VERSION ..."
		if ! (cd "$tmp" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error "mermaid@$MERMAID_VERSION" >&2); then
			rm -rf "$tmp"
			die "mermaid: npm install mermaid@$MERMAID_VERSION failed"
		fi
		[[ -s "$tmp/$file" ]] || { rm -rf "$tmp"; die "mermaid: the package has no $file"; }
		rm -rf "$entry"
		mv -T "$tmp" "$entry"
	fi
	exec {lockfd}>&-
	cp "$entry/$file" "$BIN/mermaid.min.js.tmp.$$"
	mv -f "$BIN/mermaid.min.js.tmp.$$" "$BIN/mermaid.min.js"
	log "mermaid: installed bin/mermaid.min.js ($MERMAID_VERSION)"
}

usage() {
	echo "usage: $0 helm|control-plane|kubectl|lint|browser|all|kube-apiserver@vX.Y.Z ..." >&2
	exit 2
}

# The requested tools, then one chain per module: a chain builds its tools one after another
# (they share compiled packages, and two builds of one package at once would both compile it);
# chains run at the same time. The first tool of the tools module is kube-apiserver, the
# largest; the disruption controller, helm v4 and kubectl find most of their packages compiled.
[[ $# -ge 1 ]] || usage
declare -A want=()
releases=()
for cmd in "$@"; do
	case "$cmd" in
	kube-apiserver@*) releases+=("${cmd#kube-apiserver@}") want[etcd]=1 ;;
	helm) want[helm]=1 want[helm4]=1 ;;
	control-plane) want[kube-apiserver]=1 want[disruption-controller]=1 want[etcd]=1 ;;
	kubectl) want[kubectl]=1 ;;
	lint) want[golangci-lint]=1 ;;
	browser) want[chromium]=1 want[mermaid]=1 ;;
	all) want[helm]=1 want[helm4]=1 want[kube-apiserver]=1 want[disruption-controller]=1 want[kubectl]=1 want[etcd]=1 want[golangci-lint]=1 want[chromium]=1 want[mermaid]=1 ;;
	*) usage ;;
	esac
done

chain() { # TOOL...: builds the wanted ones in order, in the background
	local tools=() t
	for t in "$@"; do
		if [[ -n "${want[$t]:-}" ]]; then tools+=("$t"); fi
	done
	[[ ${#tools[@]} -gt 0 ]] || return 0
	(
		trap cleanup EXIT
		trap 'exit 143' TERM
		for t in "${tools[@]}"; do "tool_${t//-/_}"; done
	) &
	CHAINS+=($!)
}

chain helm
chain kube-apiserver disruption-controller helm4 kubectl
chain etcd
chain golangci-lint
chain chromium mermaid

failed=0
for pid in "${CHAINS[@]}"; do
	wait "$pid" || failed=1
done
CHAINS=()
if [[ $failed != 0 ]]; then die "a tool build failed (see above)"; fi
for v in ${releases[@]+"${releases[@]}"}; do
	tool_kube_apiserver_at "$v"
done

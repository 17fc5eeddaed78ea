#!/usr/bin/env bash
# Packages driverguard as Helm plugins (make plugin; README.md "Helm plugin").
#
# For every platform of PLATFORMS it builds driverguard once (CGO_ENABLED=0, -trimpath) and
# writes three tarballs into OUT, each holding that binary as bin/driverguard:
#
#   driverguard-VERSION-OS-ARCH.tgz        Helm 4 CLI plugin (apiVersion: v1, type: cli/v1,
#                                          subprocess runtime): helm driverguard check|plan|...
#   driverguard-check-VERSION-OS-ARCH.tgz  Helm 4 post-renderer plugin (type: postrenderer/v1):
#                                          helm install --post-renderer driverguard-check
#   driverguard-helm3-VERSION-OS-ARCH.tgz  the CLI plugin in Helm 3's plugin.yaml format (Helm 3
#                                          reads plugin.yaml strictly and refuses apiVersion,
#                                          type, runtime...: one plugin.yaml cannot serve both)
#
# The Helm 4 tarballs hold a directory named after the plugin (what `helm plugin install
# FILE.tgz` and `helm plugin package` expect); the Helm 3 tarball holds the plugin's files at
# its root (what Helm 3's `helm plugin install https://.../FILE.tgz` expects; offline, extract
# it into a directory and install that). Tarballs are reproducible: sorted, owned by 0:0, with
# the commit's time (or SOURCE_DATE_EPOCH) and gzip without a name or time. SHA256SUMS lists
# them.
#
# Signed releases: with SIGN_KEY (a key name in SIGN_KEYRING, a GnuPG secret keyring such as
# `gpg --export-secret-keys > secring.gpg` writes; SIGN_PASSPHRASE_FILE if it has a passphrase)
# each Helm 4 tarball gets NAME.tgz.prov next to it (`go run ./hack/release sign-plugin`, the
# signing of make release): Helm's provenance format, a clear-signed statement of the tarball's
# SHA-256 under its file name (and under NAME-VERSION.tgz, the name Helm 4 keeps it as), which
# `helm plugin install FILE.tgz --keyring PUBRING` verifies.
#
# Environment: VERSION (default: the chart's appVersion), PLATFORMS (default "linux/amd64
# linux/arm64 darwin/arm64"), OUT (default dist/plugin), GO (default go).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
PLATFORMS="${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64}"
OUT="${OUT:-$ROOT/dist/plugin}"
SOURCE_URL="https://github.com/driverguard/driverguard"

log() { printf 'plugin.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

if [[ -z "${VERSION:-}" ]]; then
	VERSION="$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' "$ROOT/charts/driverguard/Chart.yaml")"
	[[ -n "$VERSION" ]] || die "no appVersion in charts/driverguard/Chart.yaml: set VERSION"
fi
# Helm requires a plugin's version to be strict SemVer 2 (no leading v).
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ "$VERSION" =~ $semver ]] || die "VERSION $VERSION is not a SemVer 2 version (Helm refuses it as a plugin version)"

# Paths relative to where the script was started (sign-plugin runs in $ROOT).
abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
OUT="$(abs "$OUT")"
[[ -z "${SIGN_KEYRING:-}" ]] || export SIGN_KEYRING="$(abs "$SIGN_KEYRING")"
[[ -z "${SIGN_PASSPHRASE_FILE:-}" ]] || export SIGN_PASSPHRASE_FILE="$(abs "$SIGN_PASSPHRASE_FILE")"

EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}"
tar --version 2>/dev/null | grep -q 'GNU tar' || die "GNU tar is needed (reproducible archives: --sort, --mtime, --owner)"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# plugin_yaml_cli OS ARCH: the Helm 4 CLI plugin's plugin.yaml (helm.sh/helm/v4
# internal/plugin MetadataV1, schema.ConfigCLIV1, RuntimeConfigSubprocess).
plugin_yaml_cli() {
	cat <<EOF
apiVersion: v1
name: driverguard
type: cli/v1
runtime: subprocess
version: $VERSION
sourceURL: $SOURCE_URL
config:
  usage: driverguard
  shortHelp: Judge, preview and plan RBLN NPU driver releases as the driverguard admission webhook would
  longHelp: |-
    driverguard as a Helm plugin: helm driverguard check -f values.yaml, helm driverguard plan
    -f values.yaml --live, ... (helm driverguard --help lists the commands). Helm's
    --kube-context, --namespace and --kubeconfig select the cluster (HELM_KUBECONTEXT,
    HELM_NAMESPACE, KUBECONFIG).
  ignoreFlags: false
runtimeConfig:
  platformCommand:
    - os: $1
      arch: $2
      command: \${HELM_PLUGIN_DIR}/bin/driverguard
EOF
}

# plugin_yaml_check OS ARCH: the Helm 4 post-renderer plugin. --parent-stderr: Helm 4 discards
# a post-renderer plugin's standard error, so post-render writes a denial to Helm's own too.
plugin_yaml_check() {
	cat <<EOF
apiVersion: v1
name: driverguard-check
type: postrenderer/v1
runtime: subprocess
version: $VERSION
sourceURL: $SOURCE_URL
config: {}
runtimeConfig:
  platformCommand:
    - os: $1
      arch: $2
      command: \${HELM_PLUGIN_DIR}/bin/driverguard
      args: [post-render, --parent-stderr]
EOF
}

# plugin_yaml_helm3 OS ARCH: the CLI plugin in Helm 3's format (helm.sh/helm/v3 pkg/plugin
# Metadata, read with UnmarshalStrict). Helm 4 reads it too, as a legacy plugin.
plugin_yaml_helm3() {
	cat <<EOF
name: driverguard
version: $VERSION
usage: Judge, preview and plan RBLN NPU driver releases as the driverguard admission webhook would
description: |-
  driverguard as a Helm plugin: helm driverguard check -f values.yaml, helm driverguard plan
  -f values.yaml --live, ... (helm driverguard --help lists the commands). Helm's
  --kube-context, --namespace and --kubeconfig select the cluster (HELM_KUBECONTEXT,
  HELM_NAMESPACE, KUBECONFIG).
ignoreFlags: false
platformCommand:
  - os: $1
    arch: $2
    command: \${HELM_PLUGIN_DIR}/bin/driverguard
EOF
}

# stage DIR YAML BINARY: a plugin directory holding plugin.yaml and bin/driverguard.
stage() {
	mkdir -p "$1/bin"
	printf '%s\n' "$2" >"$1/plugin.yaml"
	cp "$3" "$1/bin/driverguard"
	chmod 0755 "$1" "$1/bin" "$1/bin/driverguard"
	chmod 0644 "$1/plugin.yaml"
}

# archive OUTFILE DIR ENTRIES...: a reproducible .tgz of ENTRIES relative to DIR.
archive() {
	local out="$1" dir="$2"
	shift 2
	tar -C "$dir" --sort=name --mtime="@$EPOCH" --owner=0 --group=0 --numeric-owner \
		--format=ustar -cf - "$@" | gzip -n >"$out.tmp"
	mv -f "$out.tmp" "$out"
}

mkdir -p "$OUT"
built=()
signed=()
for platform in $PLATFORMS; do
	os="${platform%/*}"
	arch="${platform#*/}"
	[[ -n "$os" && -n "$arch" && "$platform" == */* ]] || die "platform $platform is not OS/ARCH"
	bin="$STAGE/$os-$arch/driverguard"
	log "building driverguard $VERSION for $os/$arch"
	(cd "$ROOT" && CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" "$GO" build -trimpath -ldflags "-s -w" -o "$bin" ./cmd/driverguard)

	pdir="$STAGE/$os-$arch/plugins"
	stage "$pdir/driverguard" "$(plugin_yaml_cli "$os" "$arch")" "$bin"
	stage "$pdir/driverguard-check" "$(plugin_yaml_check "$os" "$arch")" "$bin"
	stage "$pdir/helm3" "$(plugin_yaml_helm3 "$os" "$arch")" "$bin"

	archive "$OUT/driverguard-$VERSION-$os-$arch.tgz" "$pdir" driverguard
	archive "$OUT/driverguard-check-$VERSION-$os-$arch.tgz" "$pdir" driverguard-check
	archive "$OUT/driverguard-helm3-$VERSION-$os-$arch.tgz" "$pdir/helm3" plugin.yaml bin
	built+=("driverguard-$VERSION-$os-$arch.tgz" "driverguard-check-$VERSION-$os-$arch.tgz" "driverguard-helm3-$VERSION-$os-$arch.tgz")

	if [[ -n "${SIGN_KEY:-}" ]]; then
		for name in driverguard driverguard-check; do
			signed+=("$OUT/$name-$VERSION-$os-$arch.tgz")
			built+=("$name-$VERSION-$os-$arch.tgz.prov")
		done
	fi
done

if [[ ${#signed[@]} -gt 0 ]]; then
	log "signing ${#signed[@]} Helm 4 plugin tarballs with $SIGN_KEY"
	(cd "$ROOT" && "$GO" run ./hack/release sign-plugin "${signed[@]}") >&2
fi

(cd "$OUT" && sha256sum "${built[@]}" >SHA256SUMS)
for f in "${built[@]}"; do
	log "$(du -h "$OUT/$f" | cut -f1)	$OUT/$f"
done

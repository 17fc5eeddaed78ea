#!/usr/bin/env bash
# make test-matrix K8S_MINORS="1.32 1.37" (docs/development.md "Kubernetes versions"): the tests
# that run a real API server, against the kube-apiserver of each Kubernetes minor. Each minor's
# release is pinned below; hack/tools.sh kube-apiserver@vX.Y.Z builds it from Go modules into
# bin/k8s/vX.Y.Z/ (beside bin/etcd). Every test package records the server it ran against
# (test/controlplane.ReportVersion, into DRIVERGUARD_SERVER_VERSIONS); this script prints it and
# checks that it is the release it built.
#   K8S_MINORS   the minors (default: the floor the README states, and the newest)
#   PACKAGES     the test packages (default: the CRD rules, the webhook and audit, parity, Helm)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

# The newest patch release of each minor on the day it was pinned.
declare -A RELEASE=([1.32]=v1.32.13 [1.33]=v1.33.13 [1.34]=v1.34.4 [1.35]=v1.35.4 [1.36]=v1.36.3 [1.37]=v1.37.2)
floor=$(sed -n 's/.*Supported Kubernetes: \*\*1\.\([0-9]*\) or newer\*\*.*/1.\1/p' README.md)
[[ -n "$floor" ]] || { echo "test-matrix: README.md states no 'Supported Kubernetes: **1.N or newer**'" >&2; exit 1; }
MINORS=${K8S_MINORS:-"$floor 1.37"}
PACKAGES=${PACKAGES:-"./test/crd ./test/audit ./test/parity ./test/lifecycle"}

bash hack/tools.sh helm control-plane >&2
CGO_ENABLED=0 $GO build -trimpath -o bin/driverguard-test ./cmd/driverguard
failed=()
for minor in $MINORS; do
  v=${RELEASE[$minor]:-}
  [[ -n "$v" ]] || { echo "test-matrix: no release pinned for Kubernetes $minor (hack/test-matrix.sh RELEASE)" >&2; exit 2; }
  bash hack/tools.sh "kube-apiserver@$v" >&2
  echo "== Kubernetes $minor: kube-apiserver $v ($PACKAGES)"
  versions=$(mktemp)
  # shellcheck disable=SC2086 # PACKAGES is a list
  if PATH="$PWD/bin:$PATH" KUBEBUILDER_ASSETS="$PWD/bin/k8s/$v" DRIVERGUARD_BIN="$PWD/bin/driverguard-test" \
    DRIVERGUARD_SERVER_VERSIONS="$versions" $GO test $PACKAGES -count=1 -timeout 40m; then
    ran=$(sed -n 's/^kube-apiserver //p' "$versions" | sort -u | paste -sd' ')
    if [[ "$ran" != "$v" ]]; then
      echo "test-matrix: the tests ran against '$ran', not $v" >&2
      failed+=("$minor")
    else
      echo "== Kubernetes $minor: passed against kube-apiserver $ran ($(wc -l <"$versions") test packages)"
    fi
  else
    failed+=("$minor")
  fi
  rm -f "$versions"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test-matrix: failed on Kubernetes ${failed[*]}" >&2
  exit 1
fi
echo "test-matrix: passed on Kubernetes $MINORS"

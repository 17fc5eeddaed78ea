// Package findings checks the promise of docs/output.md "A finding" that every front end reports the same findings:
// for the same values and cluster, `check -o json`, `review -o json` (an AdmissionReview of
// each rendered object against the cluster check judged it against), `test -o json` (a
// generated suite, a case per values file), `audit -o json` (on the drivers check would
// store) and the Helm post-renderer (reading `helm template` output) name the same rule,
// level, object, field and message. The tests run the driverguard binary (DRIVERGUARD_BIN,
// else built once for the package) and bin/helm (hack/tools.sh helm), all from files: no
// API server.
package findings

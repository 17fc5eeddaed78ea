// Package picture holds the tests of the rollout as a picture (docs/plan.md "The picture: -o html"), tested as a person
// sees it: `plan -o html` of the examples loaded in a real headless Chromium (Debian's
// chromium, `hack/tools.sh browser`) — the DOM after load, a screenshot, the browser's
// network log — and the change ticket's mermaid gantt drawn in the same browser by mermaid's
// own library (bin/mermaid.min.js, npm's package installed by `hack/tools.sh browser`). The
// driverguard binary is DRIVERGUARD_BIN, or built once for the package.
//
// go test ./test/picture -update rewrites docs/plan-example.png, the README's screenshot.
package picture

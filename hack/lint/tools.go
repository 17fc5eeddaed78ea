//go:build tools

// Package lint pins golangci-lint, which hack/tools.sh builds into bin/ (make lint, make test).
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"

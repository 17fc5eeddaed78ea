package app

import (
	"context"
	"fmt"
	"time"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
)

// readNodes reads a node inventory: `kubectl get nodes -o yaml` output or a Node stream.
func readNodes(path string, s Streams) ([]routing.Node, error) {
	docs, err := decode.File(path, s.In)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading nodes: %w", err))
	}
	nodes, err := decode.Nodes(docs)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading nodes: %w", err))
	}
	return routing.NodesFromCore(nodes), nil
}

// readDrivers reads RBLNDrivers from any stream (e.g. the output of render).
func readDrivers(path string, s Streams) ([]v1alpha1.RBLNDriver, error) {
	docs, err := decode.File(path, s.In)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading drivers: %w", err))
	}
	drivers, err := decode.Drivers(docs)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading drivers: %w", err))
	}
	return drivers, nil
}

// imageCheckFlags configure the optional registry check.
type imageCheckFlags struct {
	enabled bool
	timeout time.Duration
}

// check HEADs every composed image of res once and marks pools whose image is missing.
func (f imageCheckFlags) check(ctx context.Context, res *routing.Result) []registry.ImageResult {
	return registry.Check(ctx, res, registry.Options{Timeout: f.timeout})
}

package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/registry"
)

// AuditOptions configure serve's audit (see audit.Loop).
type AuditOptions struct {
	// Interval of the full passes, ImageInterval of the registry checks (CheckImages), MinGap
	// the least time between two passes; PassTimeout bounds one. Zero: audit's defaults.
	Interval, ImageInterval, MinGap, PassTimeout time.Duration
	CheckImages                                  bool
	ImageTimeout                                 time.Duration
	// PullSecretNamespace is where the registry checks read the drivers' spec.imagePullSecrets
	// (README.md "Private registries"): the namespace the driver DaemonSets run in. Each pass reads each Secret it
	// needs once (get, never list: the chart grants get on Secrets in that namespace alone).
	PullSecretNamespace string
	// InsecureRegistries may be asked over plain HTTP (besides loopback).
	InsecureRegistries []string
	// MaxResults caps the results of a report (audit.DefaultMaxResults when zero).
	MaxResults int
	// LeaderElection makes one replica audit, chosen by a Lease named LeaseName in
	// LeaseNamespace; without it every replica this runs in audits.
	LeaderElection bool
	LeaseNamespace string
	LeaseName      string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election (controller-runtime's
	// defaults when zero: 15s, 10s, 2s): a leader that dies is replaced after LeaseDuration.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnPass, when set, is told about every pass.
	OnPass func(audit.PassStats)
}

// auditWriteQPS is the rate of the audit's report writes.
const auditWriteQPS = 50

// addAudit adds serve's audit to mgr: a leader-elected runnable over the cluster view.
func addAudit(mgr manager.Manager, state *cluster.Informed, o Options, log logr.Logger) error {
	a := o.Audit
	pol, ok := o.Policy.(audit.Policies)
	if !ok {
		return errors.New("the audit judges with the policy engine: serve's Policy must be one")
	}
	// The reports are written with a client of their own, allowed auditWriteQPS: the first
	// pass of a cluster with 500 drivers writes 501 reports, which the manager's client (20
	// a second) would spread over half a minute.
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = auditWriteQPS, 2*auditWriteQPS
	writer, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("the audit's client: %w", err)
	}
	loop := &audit.Loop{
		Source: state, Policies: pol, PolicyFailOpen: o.PolicyFailOpen,
		Writer:   &audit.Writer{Client: writer, Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("driverguard-audit")},
		Interval: a.Interval, ImageInterval: a.ImageInterval, MinGap: a.MinGap, PassTimeout: a.PassTimeout,
		MaxResults: a.MaxResults, Log: log, OnPass: a.OnPass,
	}
	if a.CheckImages {
		checker := registry.NewChecker(registry.Options{Timeout: a.ImageTimeout, InsecureRegistries: a.InsecureRegistries})
		secrets := mgr.GetAPIReader()
		loop.CheckImages = func(ctx context.Context, snap *cluster.Snapshot) map[string]registry.ImageResult {
			route := snap.Route()
			return checker.Check(ctx, audit.Images(snap), registry.PullSecrets(ctx, secrets, a.PullSecretNamespace, registry.SecretsOf(snap.Drivers()), route))
		}
	}
	return mgr.Add(loop)
}

// Package serve assembles the `driverguard serve` process around package webhook's handlers
// and transport ([Run]):
//
//   - a controller-runtime manager whose informer caches feed a cluster.Informed (a node kept
//     as its name, identity and labels), the cluster view the webhooks decide with;
//   - webhook.New's three webhooks registered on webhook.NewServer's bounded TLS server, started
//     once its certificate exists: files reloaded when they change, or, with [CertRotation], a
//     self-signed CA and serving certificate that cert-controller keeps in a Secret and injects
//     into the webhook configurations;
//   - /healthz and /readyz (the server, the cluster view, the registration, draining) and
//     /metrics, /policyz and pprof, each on its own bounded listener, /metrics optionally over
//     TLS behind the API server's TokenReview and SubjectAccessReview;
//   - the [Registrar], which writes the webhooks a configuration's [AnnotationWebhooks] holds
//     once this replica serves, keeps them there, and says why not (readiness, metrics,
//     Events on the pod);
//   - with [AuditOptions], audit.Loop over the same cluster view, writing ClusterReports: on
//     the replica that holds a Lease when LeaderElection is set (the manager's leader
//     election), on every replica otherwise;
//   - the graceful stop: not ready for ShutdownDelay, then in-flight requests finish.
//
// docs/webhook.md describes the flags and endpoints; action.Serve loads the policies and the
// REST config and calls Run.
package serve

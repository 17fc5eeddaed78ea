// Package webhook is driverguard's admission webhook (SPEC §5) and its offline twin, `review`.
// It has no rule of its own: RBLNDrivers and RBLNClusterPolicies are judged by package decision,
// driver DaemonSets are completed with routing's pool-composed images.
//
// The path of one request (docs/webhook.md, "Inside the webhook"):
//
//   - transport: the bounded TLS server ([NewServer]) and controller-runtime's webhook server
//     (per-path metrics), the request limiter, then reviewHandler, which reads and bounds the
//     body and decodes the AdmissionReview once, and controller-runtime's admission.Webhook
//     (panic recovery, the response's UID);
//   - decoding: the handler of the path turns the AdmissionRequest into a decision.Request
//     (typed object and old object, their JSON as received, operation, user); what it cannot
//     read is a [BadRequestError];
//   - decision: decision.Decider over one cluster.Snapshot of the [State] (the routing index);
//   - response: one function maps the verdict to the answer — allowed with warnings; 422 Invalid
//     or 403 Forbidden with causes typed by rule; 503 while the cluster view or the policies are
//     unavailable; 400 for a request that cannot be read.
//
// The cluster view is a cluster.Informed (informers) for `serve` and a cluster.Static (files) for
// `review`; [Webhooks.Review] answers an AdmissionReview through the same handler. [Run] serves
// the webhooks (TLS, certificate reload or rotation, health, metrics, graceful stop, webhook
// registration); docs/webhook.md describes all of it.
package webhook

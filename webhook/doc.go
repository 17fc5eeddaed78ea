// Package webhook holds driverguard's admission webhooks (docs/webhook.md) and their transport; `serve`
// (package serve) runs them against a live cluster, `review` and `test` answer an
// AdmissionReview offline through the same handlers ([Webhooks.Review]). It has no rule of its
// own: RBLNDrivers and RBLNClusterPolicies are judged by package decision, driver DaemonSets
// are completed with routing's pool-composed images ([DaemonSetMutator]).
//
// The path of one request (docs/webhook.md, "Inside the webhook"):
//
//   - transport: the bounded TLS server ([NewServer]: connections, handshakes, header, body and
//     idle timeouts) around controller-runtime's webhook server (per-path metrics); the request
//     limiter ([Limits]: in flight, per client, body bytes) and a request context detached from
//     the server's ([Webhooks.Register]); reviewHandler, which reads and bounds the body and
//     decodes the AdmissionReview once; controller-runtime's admission.Webhook (panic recovery,
//     the response's UID);
//   - decoding: the handler of the path turns the AdmissionRequest into a decision.Request
//     (typed object and old object, their JSON as received, operation, user); what it cannot
//     read is a [BadRequestError];
//   - decision: decision.Decider over one cluster.Snapshot of the [State]: a cluster.Informed
//     (informers) for `serve`, a cluster.Static (files) for `review` and `test`;
//   - response: one function maps the verdict to the answer — allowed with warnings; 422 Invalid
//     or 403 Forbidden with causes typed by rule; 503 while the cluster view or the policies are
//     unavailable; 400 for a request that cannot be read.
//
// [ServeBounded] serves any handler within the same connection bounds (serve's health and
// metrics endpoints). The process around the webhooks — manager, informers, certificates,
// registration, audit, leader election — is package serve's.
package webhook

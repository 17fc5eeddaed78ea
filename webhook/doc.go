// Package webhook is driverguard's admission webhook (SPEC §5): it validates RBLNDrivers and
// RBLNClusterPolicies, detects selector conflicts against what is already in the cluster, runs
// the optional OPA policies, and completes driver DaemonSets with pool-composed images. It has
// no business rules of its own: syntax comes from api/validation, owners, ties, pools and
// images from routing, policies from policy.
//
// # Layers
//
//   - Transport: controller-runtime's admission.Webhook (body limit, content type,
//     AdmissionReview v1 decoding, panic recovery, response UID). One path per webhook:
//     [PathValidateDriver], [PathValidateClusterPolicy], [PathMutateDaemonSet].
//   - Decoding: a small handler per kind turns the request into typed objects. Anything it
//     cannot read (no object, not JSON, the wrong kind or operation) is a [BadRequestError],
//     answered 400 with a message naming the field — never a panic or a 500.
//   - Decisions: typed functions with no HTTP in them — [DriverValidator] and
//     [ClusterPolicyValidator] (ValidateCreate/ValidateUpdate returning warnings and an
//     error; they satisfy controller-runtime's admission.Validator[T]) call package
//     decision; [DaemonSetMutator.Plan], whose [DaemonSetPlan] is applied to the object's
//     JSON, completes driver DaemonSets.
//   - Responses: one function (respond) maps a decision to a response: allowed with
//     warnings; a [*Rejection] (every failed rule with field, rule and fix, plus policy deny
//     messages) to 422 Invalid or 403 Forbidden with causes typed by rule; a 503 for
//     temporary failures (cluster view not synced, fail-closed policy errors); a
//     *BadRequestError to 400.
//
// # Decisions
//
// RBLNDriver and RBLNClusterPolicy requests are decided by the one decision core,
// decision.Decider, with the request's objects, operation and user and, for a driver, the
// snapshot's routing index as the cluster view: `check` and `review` call the same function,
// so CI and admission cannot disagree (SPEC §5.1). A *decision.Verdict becomes the response
// in one place (outcome): allowed with its warnings, or a [*Rejection] whose causes carry
// each finding's rule.
//
// # DaemonSet mutation
//
// Only DaemonSets labelled rebellions.ai/npu.driver.component=driver|smd are changed (the
// chart's objectSelector sends no other; any other is allowed unchanged). For the driver
// component the container rbln-driver-container gets routing.DriverImage of the RBLNDriver
// named by rebellions.ai/npu.driver.instance, for the pool read from the pod template's
// nodeSelector; for smd the container rbln-smd gets routing.SMDImage. The nodeSelector gets
// rebellions.ai/npu.driver.owner=<driver> and rebellions.ai/npu.deploy.driver=true (pool labels
// kept); updateStrategy becomes OnDelete, or RollingUpdate when the cluster policy's
// autoUpgrade is true. A missing RBLNDriver, pool label or container is denied by name. The
// response is a JSON patch holding only those changes; a second pass yields an empty patch.
//
// # Cluster state
//
// Decisions read a [State]: [CacheState] (controller-runtime informers on Node metadata,
// RBLNDrivers and RBLNClusterPolicies; the routing index is rebuilt when they change, never
// per request) for `serve`, [StaticState] (files) for `review`. Each request uses one
// immutable [Snapshot]. Like every cache-backed webhook, two requests racing each other
// (two drivers created in the same instant) are each decided against a view without the
// other; the controller's ConflictingNodeSelector condition reports such a tie afterwards.
//
// # Policies
//
// Options.Policy (any policy.Evaluator, usually the policy.Engine) is evaluated by the
// decision core on every RBLNDriver and RBLNClusterPolicy request, with the object as the API
// server sent it and, for a driver, input.routing. When the evaluator is a
// policy.ClusterSyncer, the State hands it every new snapshot's cluster view before the
// snapshot serves requests, so policies read the same cluster at data.driverguard_cluster that
// the conflict rules use. DaemonSets are never sent to policies.
//
// # Serving
//
// [Run] serves the webhooks with controller-runtime's webhook server: TLS 1.3 by default (1.2
// allowed), HTTP/1.1 unless HTTP/2 is enabled, certificates reloaded from CertDir when they
// change, optional self-signed bootstrap and rotation (cert-controller, as Gatekeeper does)
// with CA injection into the webhook configurations, /healthz and /readyz (ready once the
// server listens and the cluster view has synced), controller-runtime's webhook metrics
// (controller_runtime_webhook_requests_total, _latency_seconds, _requests_in_flight) plus
// driverguard_webhook_state_* on the metrics endpoint, and a graceful stop: not ready for
// ShutdownDelay, then in-flight requests finish within ShutdownTimeout.
//
// [Webhooks.Review] answers an AdmissionReview offline through the same HTTP handler
// (`driverguard review`).
package webhook

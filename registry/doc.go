// Package registry checks that composed driver images exist before a pool is rolled out
// (SPEC §4, "Registry check").
//
// Each distinct image is checked once with a manifest HEAD request (remote.Head), with
// bounded concurrency and a per-image timeout. Only an HTTP 404 answered to the manifest HEAD
// itself means [NotFound]; the pools that use the image then fail with
// routing.ReasonDriverImageNotFound naming the exact path. Anything else — 401/403, a
// timeout, TLS or DNS errors, a 404 from the /v2/ ping or the token endpoint, an unparsable
// reference — is a [Warning]: the image is not verified, its [Reason] says why (unreachable,
// timeout, tls, dns, unauthorized, forbidden, ...), the pool proceeds and the kubelet decides
// whether the pull works. A [Summary] counts what a check covered — found, missing, not
// verified and why — and every output that reports a check prints it, so that images nobody
// could ask about are never reported as present.
//
// The CLI calls
//
//	res := routing.Route(drivers, nodes, routing.Options{})
//	results, summary := registry.Check(ctx, res, registry.Options{Keychain: kc})
//
// and a long-running caller (the webhook, a periodic re-check) keeps one Checker:
//
//	results := checker.Check(ctx, registry.Images(res))
//	warnings := registry.Apply(res, results)
//
// Pull credentials come from an [authn.Keychain]: [StaticKeychain] maps registry hosts to
// authenticators, [KeychainFromDockerConfigJSON] and [KeychainFromSecrets] build one from
// imagePullSecrets (kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg).
package registry

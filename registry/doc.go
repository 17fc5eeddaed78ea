// Package registry checks that composed driver images exist before a pool is rolled out
// (docs/routing.md "Pools, DaemonSets, images", README.md "Private registries").
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
//
// Credentials never appear in output (docs/audit.md "serve --audit"). An [ImageResult]'s Message and Err, which
// every output format, the audit's ClusterReports and the logs print, are rebuilt in
// driverguard's own words (describe.go): the registry host of the image's reference, the kind
// of request (the /v2/ ping, the manifest request, the token request — never a URL: a token
// realm is the registry's choice), the HTTP status, only the error codes the OCI distribution
// spec defines, and a fixed phrase per kind of failure chosen by the error's type. Nothing a
// registry writes — a body, a header, an error code or message, a realm — is repeated, and
// neither is an error's own text. Last, what a message holds from outside driverguard (what a
// credential source says is wrong with it: an API server's or a file system's error) is
// stripped of every secret the check sent or was sent, in every form it travels in (plain,
// user:password, URL-encoded, JSON-escaped with "/" as "\/", hex in either case, base64 of
// user:password padded and not, standard and URL-safe, the Authorization header) — but not
// of one that driverguard's own words or the user's own configuration in the same result
// hold (the image reference, the registry host, the sources' names), which are printed whole
// anyway: "[redacted]" there would only point at it. The secrets are the credentials sent,
// and the token fields (token, access_token, refresh_token, id_token) of a token answer. The
// manifest digest, the one value a registry writes that is printed, is printed only when it
// is a well-formed OCI digest that holds none of them. TestHostileRegistriesGetNoCredentialBack,
// TestHostileDigestIsNotPrinted, TestRedactionPointsAtNothing and test/redaction hold it.
package registry

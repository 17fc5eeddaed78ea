// Package redaction holds the promise of README.md "Private registries" that credentials never appear in output, end to
// end, against registries written to make a client repeat what it was sent
// (registrytest.NewHostile: a token realm that is no URL and carries the Authorization seen
// before, a token answer echoing the Authorization in JSON with "/" as "\/", an error code that
// is the password, the password split across codes and messages, base64 and URL-encoded
// echoes, a realm URL holding the credential; and registries that take the credentials and
// answer a manifest with a digest of their choice — the hex of the password or of a token —
// or with a server error when the password is a path segment of the image, where
// "[redacted]" in a message would point at it).
//
// The real driverguard binary (built once, or DRIVERGUARD_BIN) runs every command that checks
// images — preview, plan, route and audit from files with a Docker config that holds
// robot:<password> for each registry, audit --kubeconfig with the drivers' pull Secrets — in
// every output format its --help lists, twice; and `serve --audit --audit-check-images` runs
// as a process of its own, twice, against the package's one API server (envtest). Standard
// output, standard error, serve's log, and every ClusterReport and Event read back from the
// API server are searched for every form of every credential, decoded as JSON, XML/HTML,
// Markdown, YAML and percent-escapes would hide it, and for anything the registries wrote.
package redaction

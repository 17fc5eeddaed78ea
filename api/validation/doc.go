// Package validation holds the syntax rules for RBLNDriver and RBLNClusterPolicy that the
// renderer, the routing engine, the webhook and the CLI share: instance keys, resource names,
// node selectors (label syntax and reserved keys) and upgrade-policy sanity. Each rule is
// written once here; callers pass the field path their users know (a values path such as
// driver.instances.atom-canary.nodeSelector, or an object path such as spec.nodeSelector).
package validation

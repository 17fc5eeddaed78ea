// Package e2e runs driverguard against a real control plane: kube-apiserver and etcd from
// KUBEBUILDER_ASSETS (or <repo>/bin, built by `make tools`), the CRDs of config/crd/bases, the
// chart's own webhook configurations, `driverguard serve`'s server in-process, and the real
// helm binary. Every assertion goes through the API server.
package e2e

// Package differential proves that the Go renderer (package render) and the Helm chart
// (charts/driverguard, rendered by the real helm binary and by helm's own engine in-process)
// produce the same RBLNDriver and RBLNClusterPolicy objects for every input, and reject the
// same invalid inputs.
package differential

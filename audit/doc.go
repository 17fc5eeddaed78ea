// Package audit judges what is stored (docs/audit.md): every RBLNDriver and the RBLNClusterPolicy
// of a cluster snapshot through the one decision core, as if created now against the
// current cluster, plus the drift of the nodes (routing.NodeDrift) and, with image results,
// the images the pools pull that their registry lacks. A pass gives one report per
// RBLNDriver and one for the cluster (ClusterReportName), each with its results capped and
// its summary exact; Reports turns them into openreports.io ClusterReports. The audit
// reports; it never changes what it judges. docs/audit.md describes it.
package audit

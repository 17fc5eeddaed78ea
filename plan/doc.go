// Package plan computes what applying a release does to every node — the rollout plan of
// docs/plan.md (`driverguard plan`): per RBLNDriver its action and versions, per node its owner,
// pool and image before and after and the action that follows (upgrade, change-owner,
// lose-driver, gain-driver, held by the skip label, blocked by a drain blocker), the rollout
// in batches of maxParallelUpgrades or, with autoUpgrade false, the manual procedure per
// node, drain blockers computed as the disruption controller and kubectl drain decide them,
// the images the registry lacks, and the drift of the cluster now.
//
// It has no rules of its own: the release is judged and applied by package release (the
// webhook's decision, in Helm's order), routing gives the owners, pools and images before and
// after, and registry asks for the images.
package plan

// Package render expands driverguard chart values into RBLNDriver and RBLNClusterPolicy
// objects, exactly as the chart in charts/driverguard does, and explains where every field
// came from.
//
// Values are loaded and coalesced by Helm's own code (pkg/cli/values, pkg/chartutil), so -f,
// --set and the chart's values.yaml combine exactly as `helm template` combines them. The
// driver block is then checked strictly — unknown keys (with a did-you-mean), wrong types,
// label syntax, reserved selector keys — and every problem is reported with its values path
// before anything is rendered: all or nothing. Finally each driver.instances entry inherits
// from the top-level block (maps deep-merge through chartutil.CoalesceTables, lists and
// scalars replace, null removes the inherited value, nodeSelector is never inherited).
package render

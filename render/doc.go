// Package render expands driverguard chart values into RBLNDriver and RBLNClusterPolicy
// objects, exactly as the chart in charts/driverguard does ([Render]), and says where every
// field came from (docs/values.md).
//
// Values are loaded and coalesced by Helm's own code, remembering where the user wrote each
// value ([Load], values.go, sources.go, locate.go). One bounds pass keeps what is over the
// schema's size bounds away from the validator (bounds.go); then the chart's
// values.schema.json, compiled once (schema.go), validates them: the schema is the single source
// of their structural rules, and its errors become field errors at the values path, with
// did-you-mean and quoting hints (schemaerrors.go, suggest.go). check.go holds only what a
// schema cannot say (label syntax, annotation sizes, nulls that remove a required image field,
// merged size limits); every problem is reported at once, as an [*InvalidValuesError], before
// anything is rendered. Instances inherit the driver block by Helm's chartutil.CoalesceTables
// (maps merge, lists and scalars replace, null removes; nodeSelector is never inherited), and
// each RBLNDriver's effective block is decoded once into typed values (block.go) that toSpec
// turns into a spec (render.go), with, when asked, each field's origin (provenance.go).
//
// [Manifest] writes the objects as `helm template` prints them; [MakeRollback] computes the
// values overlay that renders given objects again, proven by rendering it (plan's rollback).
// Adding a field: the schema, its typed field and where toSpec reads it, the template, a test;
// adding an enum value: the schema alone.
package render

// Package render expands driverguard chart values into RBLNDriver and RBLNClusterPolicy
// objects, exactly as the chart in charts/driverguard does, and explains where every field
// came from (docs/values.md).
//
// Values are loaded and coalesced by Helm's own code (values.go), then validated by the
// chart's values.schema.json, compiled once (schema.go): the schema is the single source of
// their structural rules, and its errors become field errors at the values path, with
// did-you-mean and quoting hints (schemaerrors.go). check.go holds only what a schema cannot
// say (label syntax, annotation sizes, nulls that remove a required image field, merged size
// limits); everything is reported at once, before anything is rendered. Instances inherit the
// driver block by Helm's chartutil.CoalesceTables (maps merge, lists and scalars replace, null
// removes; nodeSelector is never inherited), and each RBLNDriver's effective block is decoded
// once into typed values (block.go) that toSpec turns into a spec (render.go). Adding a field:
// the schema, its typed field and where toSpec reads it, the template, a test; adding an enum
// value: the schema alone.
package render

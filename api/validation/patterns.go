package validation

// Regular expressions shared by the Go code and the chart's values.schema.json (a test keeps
// the schema's copies equal to these).
const (
	// RegistryPattern is a registry host with an optional port (no scheme, no path).
	RegistryPattern = `^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:[0-9]+)?$`
	// RepositoryPattern is an OCI repository path without registry or tag.
	RepositoryPattern = `^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	// TagPattern is the OCI distribution-spec tag grammar.
	TagPattern = `^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`
	// LabelKeyPattern is a label key: an optional DNS-subdomain prefix and a name of at most 63
	// characters. (The 253-character prefix limit is checked in code.)
	LabelKeyPattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// LabelValuePattern is a label value (at most 63 characters, checked separately).
	LabelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

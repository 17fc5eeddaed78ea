package policy

// MessageText is how a message value becomes Message.Msg, for tests that build decisions of
// their own (decision_test.go's direct evaluation).
var MessageText = messageText

// SetConversion selects how inputs are converted, for BenchmarkServeHTTP's variants: opaJSON
// converts JSON text with OPA's own conversion, nodeTermCache takes node-name terms from the
// cache. It returns the function that restores the defaults.
func SetConversion(opa, nodeTermCache bool) (restore func()) {
	opaJSON, noNodeTermCache = opa, !nodeTermCache
	return func() { opaJSON, noNodeTermCache = false, false }
}

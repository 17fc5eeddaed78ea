package policy

// MessageText is how a message value becomes Message.Msg, for tests that build decisions of
// their own (decision_test.go's direct evaluation).
var MessageText = messageText

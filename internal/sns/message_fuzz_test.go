package sns

import "testing"

// The webhook parses every delivery before it can tell a real one from a
// flood, so the parsers' allocations are guarded, with bounds about twice
// what they take under -race (which adds a few; counts do not depend on
// the machine). A change that trips one should say why in its commit, or
// give the allocations back.

// TestParseMessageAllocs: about twenty for a signed message (the JSON
// fields, the signature, the topic ARN), a handful for a truncated body.
func TestParseMessageAllocs(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		limit float64
	}{
		{"Notification", mustJSON(t, sign(t, notification(testNow), SignatureVersion2)), 44},
		{"SubscriptionConfirmation", mustJSON(t, sign(t, confirmation(TypeSubscriptionConfirmation, testNow), SignatureVersion1)), 44},
		{"ErrTruncated", []byte(`{"Type":"Notification"`), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { _, _ = ParseMessage(tt.body) }); n > tt.limit {
				t.Errorf("ParseMessage: %v allocations, want at most %v", n, tt.limit)
			}
		})
	}
}

// TestParseStackEventAllocs: about fifty for a CloudFormation stack event.
func TestParseStackEventAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseStackEvent(stackMessage) }); n > 110 {
		t.Errorf("ParseStackEvent: %v allocations, want at most 110", n)
	}
}

package sns

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testStackID = "arn:aws:cloudformation:us-east-1:123456789012:stack/kukie-access/5b0fd7a0-1c2d-11f0-9e3b-0a1b2c3d4e5f"

// stackMessage is a notification text as CloudFormation publishes it.
const stackMessage = `StackId='` + testStackID + `'
Timestamp='2026-03-04T05:06:07.123Z'
EventId='kukie-access-UPDATE_COMPLETE-2026-03-04T05:06:07.123Z'
LogicalResourceId='kukie-access'
Namespace='123456789012'
PhysicalResourceId='` + testStackID + `'
PrincipalId='AIDAEXAMPLEEXAMPLE'
ResourceProperties='null'
ResourceStatus='UPDATE_COMPLETE'
ResourceStatusReason=''
ResourceType='AWS::CloudFormation::Stack'
StackName='kukie-access'
ClientRequestToken='null'
`

func stackEvent() StackEvent {
	return StackEvent{
		StackID:              testStackID,
		Timestamp:            "2026-03-04T05:06:07.123Z",
		EventID:              "kukie-access-UPDATE_COMPLETE-2026-03-04T05:06:07.123Z",
		LogicalResourceID:    "kukie-access",
		Namespace:            "123456789012",
		PhysicalResourceID:   testStackID,
		PrincipalID:          "AIDAEXAMPLEEXAMPLE",
		ResourceProperties:   "null",
		ResourceStatus:       "UPDATE_COMPLETE",
		ResourceStatusReason: "",
		ResourceType:         StackTypeName,
		StackName:            "kukie-access",
		ClientRequestToken:   "null",
	}
}

func TestParseStackEvent(t *testing.T) {
	props := `{"ManagedPolicyArns":["arn:aws:iam::aws:policy/x"],
  "Description":"Kukie's 'limited' role",
  "Tags":[{"Key":"note","Value":"a='b'"}]
}`
	resource := stackEvent()
	resource.LogicalResourceID = "KukieRole"
	resource.ResourceType = "AWS::IAM::Role"
	resource.ResourceProperties = props
	resource.ResourceStatusReason = "Resource creation Initiated\nsecond line"

	withBlankValueLine := stackEvent()
	withBlankValueLine.ResourceStatusReason = "first\n\nthird\n"

	tests := []struct {
		name    string
		message string
		want    StackEvent
	}{
		{"StackUpdateComplete", stackMessage, stackEvent()},
		{"NoTrailingNewline", strings.TrimSuffix(stackMessage, "\n"), stackEvent()},
		{"TrailingBlankLines", stackMessage + "\n\n  \n", stackEvent()},
		{"LeadingBlankLines", "\n\n" + stackMessage, stackEvent()},
		{"CRLF", strings.ReplaceAll(stackMessage, "\n", "\r\n"), stackEvent()},
		{"UnknownKeyIgnored", stackMessage + "NewField='x'\n", stackEvent()},
		{"TextAfterClosingQuote", strings.Replace(stackMessage, "StackName='kukie-access'", "StackName='kukie-access' ", 1), stackEvent()},
		{"MultiLineJSONWithQuotes", FormatStackEvent(resource), resource},
		{"BlankLinesInsideValue", FormatStackEvent(withBlankValueLine), withBlankValueLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStackEvent(tt.message)
			if err != nil {
				t.Fatalf("ParseStackEvent: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("FormatIsCloudFormationsText", func(t *testing.T) {
		if diff := cmp.Diff(stackMessage, FormatStackEvent(stackEvent())); diff != "" {
			t.Errorf("Format (-want +got):\n%s", diff)
		}
	})
}

func TestParseStackEventErrors(t *testing.T) {
	tests := []struct {
		name    string
		message string
	}{
		{"ErrEmpty", ""},
		{"ErrNotKeyValue", "You have chosen to subscribe to the topic."},
		{"ErrTextBeforeFirstKey", "hello\n" + stackMessage},
		{"ErrDuplicateKey", stackMessage + "ResourceStatus='UPDATE_COMPLETE'\n"},
		{"ErrInjectedKeyInValue", strings.Replace(stackMessage, "ResourceProperties='null'", "ResourceProperties='{\nResourceStatus='UPDATE_COMPLETE'}'", 1)},
		{"ErrUnterminated", strings.Replace(stackMessage, "StackName='kukie-access'", "StackName='kukie-access", 1)},
		{"ErrUnterminatedMultiLine", strings.Replace(stackMessage, "ResourceProperties='null'", "ResourceProperties='{\n}", 1)},
		{"ErrMissingStackId", strings.Replace(stackMessage, "StackId=", "X=", 1)},
		{"ErrMissingNamespace", strings.Replace(stackMessage, "Namespace=", "X=", 1)},
		{"ErrMissingStatus", strings.Replace(stackMessage, "ResourceStatus=", "X=", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStackEvent(tt.message)
			if !errors.Is(err, ErrBadStackEvent) || ReasonOf(err) != ReasonStackEvent {
				t.Errorf("ParseStackEvent = %v, want ErrBadStackEvent", err)
			}
		})
	}
}

func TestStackEventState(t *testing.T) {
	tests := []struct {
		name               string
		edit               func(*StackEvent)
		completed, deleted bool
	}{
		{"UpdateComplete", func(e *StackEvent) {}, true, false},
		{"CreateComplete", func(e *StackEvent) { e.ResourceStatus = "CREATE_COMPLETE" }, true, false},
		{"UpdateRollbackComplete", func(e *StackEvent) { e.ResourceStatus = "UPDATE_ROLLBACK_COMPLETE" }, true, false},
		{"DeleteComplete", func(e *StackEvent) { e.ResourceStatus = "DELETE_COMPLETE" }, false, true},
		{"UpdateInProgress", func(e *StackEvent) { e.ResourceStatus = "UPDATE_IN_PROGRESS" }, false, false},
		{"UpdateCompleteCleanupInProgress", func(e *StackEvent) { e.ResourceStatus = "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS" }, false, false},
		{"RollbackComplete", func(e *StackEvent) { e.ResourceStatus = "ROLLBACK_COMPLETE" }, false, false},
		{"UpdateFailed", func(e *StackEvent) { e.ResourceStatus = "UPDATE_FAILED" }, false, false},
		{"DeleteInProgress", func(e *StackEvent) { e.ResourceStatus = "DELETE_IN_PROGRESS" }, false, false},
		{"OtherResource", func(e *StackEvent) {
			e.ResourceType, e.LogicalResourceID = "AWS::IAM::Role", "KukieRole"
		}, false, false},
		{"OtherResourceNamedAsStack", func(e *StackEvent) { e.ResourceType = "AWS::IAM::Role" }, false, false},
		{"NestedStack", func(e *StackEvent) { e.LogicalResourceID = "Nested" }, false, false},
		{"NestedStackDeleted", func(e *StackEvent) {
			e.LogicalResourceID, e.ResourceStatus = "Nested", "DELETE_COMPLETE"
		}, false, false},
		{"LowercaseStatus", func(e *StackEvent) { e.ResourceStatus = "update_complete" }, false, false},
		{"NoStackName", func(e *StackEvent) {
			e.StackName, e.LogicalResourceID = "", ""
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := stackEvent()
			tt.edit(&e)
			if got := e.StackCompleted(); got != tt.completed {
				t.Errorf("StackCompleted = %v, want %v", got, tt.completed)
			}
			if got := e.Deleted(); got != tt.deleted {
				t.Errorf("Deleted = %v, want %v", got, tt.deleted)
			}
		})
	}
}

// FuzzParseStackEvent: any text either fails with ErrBadStackEvent or
// parses to an event that Format renders back to the same event.
func FuzzParseStackEvent(f *testing.F) {
	f.Add(stackMessage)
	f.Add(strings.ReplaceAll(stackMessage, "\n", "\r\n"))
	f.Add("ResourceProperties='{\"a\":\"it's\"}\n\n'\nStackId='x'")
	f.Add("A='\nB='\n'")
	f.Add("'\n='\nA=''")
	f.Fuzz(func(t *testing.T, message string) {
		if len(message) > maxFuzzInput {
			return
		}
		e, err := ParseStackEvent(message)
		if err != nil {
			if !errors.Is(err, ErrBadStackEvent) {
				t.Fatalf("ParseStackEvent error %v is not ErrBadStackEvent", err)
			}
			return
		}
		again, err := ParseStackEvent(FormatStackEvent(e))
		if err != nil {
			t.Fatalf("Format of a parsed event does not parse: %v\n%q", err, FormatStackEvent(e))
		}
		if diff := cmp.Diff(e, again); diff != "" {
			t.Errorf("round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}

// FuzzStackEventRoundTrip: single-line values, quotes included, read back
// exactly as written.
func FuzzStackEventRoundTrip(f *testing.F) {
	f.Add(testStackID, "kukie-access", "UPDATE_COMPLETE", "null", "it's 'quoted'")
	f.Add("", "", "", "", "")
	f.Add("'", "''", "x'", "{\"a\":'b'}", " ")
	f.Fuzz(func(t *testing.T, stackID, name, status, props, reason string) {
		if len(stackID)+len(name)+len(status)+len(props)+len(reason) > maxFuzzInput {
			return
		}
		for _, v := range []string{stackID, name, status, props, reason} {
			if strings.Contains(v, "\n") {
				return // multi-line values are covered by FuzzParseStackEvent
			}
		}
		want := stackEvent()
		want.StackID, want.StackName, want.LogicalResourceID = stackID, name, name
		want.ResourceStatus, want.ResourceProperties, want.ResourceStatusReason = status, props, reason
		got, err := ParseStackEvent(FormatStackEvent(want))
		if err != nil {
			t.Fatalf("ParseStackEvent(Format) = %v\n%q", err, FormatStackEvent(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	})
}

package sns

import (
	"regexp"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// CloudFormationSubject is the Subject of CloudFormation's stack
// notifications.
const CloudFormationSubject = "AWS CloudFormation Notification"

// StackTypeName is the ResourceType of a stack's events about itself.
const StackTypeName = service.StackTypeName

// StackEvent is one CloudFormation stack event as published to SNS: the
// service's type, which ParseStackEvent fills.
type StackEvent = service.StackEvent

// stackEventFields pairs each message key, in CloudFormation's order, with
// its field of e.
func stackEventFields(e *StackEvent) []struct {
	key string
	val *string
} {
	return []struct {
		key string
		val *string
	}{
		{"StackId", &e.StackID},
		{"Timestamp", &e.Timestamp},
		{"EventId", &e.EventID},
		{"LogicalResourceId", &e.LogicalResourceID},
		{"Namespace", &e.Namespace},
		{"PhysicalResourceId", &e.PhysicalResourceID},
		{"PrincipalId", &e.PrincipalID},
		{"ResourceProperties", &e.ResourceProperties},
		{"ResourceStatus", &e.ResourceStatus},
		{"ResourceStatusReason", &e.ResourceStatusReason},
		{"ResourceType", &e.ResourceType},
		{"StackName", &e.StackName},
		{"ClientRequestToken", &e.ClientRequestToken},
	}
}

// requiredStackKeys are the keys a decision about the event needs.
var requiredStackKeys = []string{"StackId", "LogicalResourceId", "Namespace", "ResourceStatus", "ResourceType", "StackName"}

var keyLinePattern = regexp.MustCompile(`^([A-Za-z]+)='`)

// ParseStackEvent reads the Message of a CloudFormation notification:
// newline-separated Key='value' lines. A line starting with Key=' starts a
// new key; any other line continues the previous value (values may hold
// quotes, newlines and JSON), which ends at the last quote of its last
// non-blank line. Unknown keys are ignored; a repeated key, text before the
// first key, an unterminated value or a missing StackId, LogicalResourceId,
// Namespace, ResourceStatus, ResourceType or StackName fail with
// ErrBadStackEvent.
func ParseStackEvent(message string) (StackEvent, error) {
	bad := func(detail string) (StackEvent, error) {
		return StackEvent{}, &Error{Kind: ErrBadStackEvent, Reason: ReasonStackEvent, Detail: detail}
	}
	type entry struct {
		key   string
		lines []string
	}
	var entries []entry
	for line := range strings.SplitSeq(message, "\n") {
		if m := keyLinePattern.FindStringSubmatch(line); m != nil {
			entries = append(entries, entry{key: m[1], lines: []string{line[len(m[0]):]}})
			continue
		}
		if len(entries) == 0 {
			if strings.TrimSpace(line) != "" {
				return bad("text before the first key")
			}
			continue
		}
		last := &entries[len(entries)-1]
		last.lines = append(last.lines, line)
	}

	var e StackEvent
	byKey := map[string]*string{}
	for _, f := range stackEventFields(&e) {
		byKey[f.key] = f.val
	}
	seen := map[string]bool{}
	for _, en := range entries {
		if seen[en.key] {
			return bad("key " + en.key + " appears twice")
		}
		seen[en.key] = true
		lines := en.lines
		for len(lines) > 1 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		first, last := lines[:len(lines)-1], lines[len(lines)-1]
		end := strings.LastIndexByte(last, '\'')
		if end < 0 {
			return bad("value of " + en.key + " has no closing quote")
		}
		value := last[:end]
		if len(first) > 0 {
			value = strings.Join(first, "\n") + "\n" + value
		}
		if p, ok := byKey[en.key]; ok {
			*p = value
		}
	}
	for _, k := range requiredStackKeys {
		if !seen[k] {
			return bad("key " + k + " is missing")
		}
	}
	return e, nil
}

// FormatStackEvent renders e as CloudFormation writes it, every key in
// order. A value with a line that itself starts with Key=' does not read
// back the same.
func FormatStackEvent(e StackEvent) string {
	var b strings.Builder
	for _, f := range stackEventFields(&e) {
		b.WriteString(f.key)
		b.WriteString("='")
		b.WriteString(*f.val)
		b.WriteString("'\n")
	}
	return b.String()
}

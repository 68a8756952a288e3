package snstest

import (
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/kukie/gitops-server/internal/sns"
)

// StackEventPrincipal is the PrincipalId of the events StackStatusEvent
// makes: the IAM principal that changed the stack.
const StackEventPrincipal = "AROAEXAMPLEEXAMPLE1:kukie-test"

// StackEventMessage is e as CloudFormation publishes it to SNS, the
// Message of a notification with Subject sns.CloudFormationSubject:
// Key='value' lines in CloudFormation's order, each ending in a newline,
// with 'null' for an empty ResourceProperties or ClientRequestToken, as
// CloudFormation writes them (an empty ResourceStatusReason or
// PhysicalResourceId stays ”).
func StackEventMessage(e sns.StackEvent) string {
	if e.ResourceProperties == "" {
		e.ResourceProperties = "null"
	}
	if e.ClientRequestToken == "" {
		e.ClientRequestToken = "null"
	}
	return sns.FormatStackEvent(e)
}

// StackStatusEvent is the event CloudFormation publishes when the stack
// stackARN itself (not one of its resources) reaches status at the given
// time: ResourceType AWS::CloudFormation::Stack, LogicalResourceId and
// StackName the stack's name, Namespace its account, PhysicalResourceId
// its ARN, a fresh EventId. With status UPDATE_COMPLETE (or CREATE_COMPLETE,
// UPDATE_ROLLBACK_COMPLETE) it is what sns.StackEvent.StackCompleted
// accepts. It panics if stackARN is not
// arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<id>.
func StackStatusEvent(stackARN, status string, at time.Time) sns.StackEvent {
	parts := strings.Split(stackARN, ":")
	var name string
	if len(parts) == 6 && parts[0] == "arn" && parts[2] == "cloudformation" {
		if resource := strings.Split(parts[5], "/"); len(resource) == 3 && resource[0] == "stack" {
			name = resource[1]
		}
	}
	if name == "" {
		panic("snstest: not a CloudFormation stack ARN: " + stackARN)
	}
	return sns.StackEvent{
		StackID:            stackARN,
		Timestamp:          at.UTC().Format(timestampLayout),
		EventID:            uuid.NewString(),
		LogicalResourceID:  name,
		Namespace:          parts[4],
		PhysicalResourceID: stackARN,
		PrincipalID:        StackEventPrincipal,
		ResourceProperties: "null",
		ResourceStatus:     status,
		ResourceType:       sns.StackTypeName,
		StackName:          name,
		ClientRequestToken: "null",
	}
}

package eksaccess

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kukie/gitops-server/service"
)

// The customer template's names.
const (
	paramAccessLevel       = "AccessLevel"
	paramAllowedNamespaces = "AllowedNamespaces"
	outputTemplateVersion  = "KukieTemplateVersion"
	// v4 stacks (no KukieTemplateVersion output) granted edit in kukie-*.
	v4TemplateVersion = "4"
	v4Namespaces      = "kukie-*"
)

// DescribeStack reads the customer's stack through the role, in the stack
// ARN's region. A missing or deleted stack, or one the role may not
// describe, is stack_not_found.
func (a *AWS) DescribeStack(ctx context.Context, roleARN, externalID, stackARN string) (service.StackFacts, error) {
	stack, ok := service.ParseStackARN(stackARN)
	if !ok {
		return service.StackFacts{}, errStackNotFound(nil)
	}
	client, err := a.cloudFormationClient(ctx, roleARN, externalID, stack.Region)
	if err != nil {
		return service.StackFacts{}, err
	}
	out, err := client.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackARN)})
	switch code := apiCode(err); {
	case err == nil:
	case code == "ValidationError" || code == "AccessDenied":
		return service.StackFacts{}, errStackNotFound(err)
	case errors.Is(err, context.Canceled):
		return service.StackFacts{}, err
	case transient(err):
		return service.StackFacts{}, errUnavailable(err)
	default:
		return service.StackFacts{}, service.WrapError(service.EINTERNAL, "DescribeStacks failed.", err)
	}
	if len(out.Stacks) == 0 || out.Stacks[0].StackStatus == cftypes.StackStatusDeleteComplete {
		return service.StackFacts{}, errStackNotFound(nil)
	}
	return stackFacts(out.Stacks[0]), nil
}

func errStackNotFound(err error) error {
	return &service.Error{Code: service.EVALIDATION, Reason: reasonStackNotFound, Err: err,
		Message: "The stack was not found or the role may not describe it: check the stack ARN (the Kukie stack that created this role)."}
}

// stackFacts reads the level, namespaces, template version and topics of
// a stack. The level is never wider than the stack says: a v4 stack (no
// version output) is limited to kukie-*, and an AccessLevel other than
// FULL or LIMITED is limited; both ask a person to confirm.
func stackFacts(s cftypes.Stack) service.StackFacts {
	params := map[string]string{}
	for _, p := range s.Parameters {
		params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	facts := service.StackFacts{NotificationARNs: slices.Clone(s.NotificationARNs)}
	if facts.NotificationARNs == nil {
		facts.NotificationARNs = []string{}
	}
	for _, o := range s.Outputs {
		if aws.ToString(o.OutputKey) == outputTemplateVersion {
			facts.TemplateVersion = strings.TrimSpace(aws.ToString(o.OutputValue))
		}
	}
	if facts.TemplateVersion == "" {
		facts.TemplateVersion = v4TemplateVersion
		facts.AccessLevel = service.AccessLimited
		facts.AllowedNamespaces = []string{v4Namespaces}
		facts.ConfirmationRequired = true
		facts.Reason = "The stack is Kukie template v4 (it has no KukieTemplateVersion output): access stays limited to " +
			"the kukie-* namespaces. Update the stack to the current template and choose AccessLevel to change it."
		return facts
	}
	facts.AllowedNamespaces = splitNamespaces(params[paramAllowedNamespaces])
	switch level := params[paramAccessLevel]; level {
	case "FULL":
		facts.AccessLevel = service.AccessFull
	case "LIMITED":
		facts.AccessLevel = service.AccessLimited
	default:
		facts.AccessLevel = service.AccessLimited
		facts.ConfirmationRequired = true
		facts.Reason = "The stack's AccessLevel " + quoteOrMissing(level) +
			" is neither FULL nor LIMITED: access is applied as limited until the stack says FULL or LIMITED."
	}
	return facts
}

// splitNamespaces reads a CommaDelimitedList: split, trimmed, without
// empty items, distinct, sorted.
func splitNamespaces(s string) []string {
	out := []string{}
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func quoteOrMissing(s string) string {
	if s == "" {
		return "(missing)"
	}
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

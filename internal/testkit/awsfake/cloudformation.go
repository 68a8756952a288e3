package awsfake

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

const cfnVersion = "2010-05-15"

// Stack is a CloudFormation stack in a customer account.
type Stack struct {
	// ARN is arn:aws:cloudformation:<region>:<account>:stack/<name>/<id>.
	ARN              string
	Parameters       map[string]string
	Outputs          map[string]string
	NotificationARNs []string
	// Status defaults to CREATE_COMPLETE.
	Status string
	// CreationTime defaults to the fake's clock when added.
	CreationTime time.Time
}

// stackARN is a parsed stack ARN.
type stackARN struct {
	region, account, name string
}

func parseStackARN(arn string) (stackARN, bool) {
	p := strings.SplitN(arn, ":", 6)
	if len(p) != 6 || p[0] != "arn" || p[2] != "cloudformation" || p[3] == "" || !isAccountID(p[4]) {
		return stackARN{}, false
	}
	res := strings.Split(p[5], "/")
	if len(res) != 3 || res[0] != "stack" || res[1] == "" || res[2] == "" {
		return stackARN{}, false
	}
	return stackARN{region: p[3], account: p[4], name: res[1]}, true
}

// AddStack adds or replaces a stack (replacing models a stack update).
func (a *AWS) AddStack(s Stack) {
	if _, ok := parseStackARN(s.ARN); !ok {
		panic("awsfake: AddStack: not a stack ARN: " + s.ARN)
	}
	s.Parameters = maps.Clone(s.Parameters)
	s.Outputs = maps.Clone(s.Outputs)
	s.NotificationARNs = slices.Clone(s.NotificationARNs)
	if s.Status == "" {
		s.Status = "CREATE_COMPLETE"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.CreationTime.IsZero() {
		s.CreationTime = a.now()
	}
	a.stacks[s.ARN] = &s
}

type describeStacksResult struct {
	XMLName xml.Name   `xml:"DescribeStacksResult"`
	Stacks  []cfnStack `xml:"Stacks>member"`
}

type cfnStack struct {
	StackID          string         `xml:"StackId"`
	StackName        string         `xml:"StackName"`
	Parameters       []cfnParameter `xml:"Parameters>member"`
	CreationTime     string         `xml:"CreationTime"`
	StackStatus      string         `xml:"StackStatus"`
	NotificationARNs cfnMembers     `xml:"NotificationARNs"`
	Outputs          []cfnOutput    `xml:"Outputs>member"`
}

type cfnMembers struct {
	Members []string `xml:"member"`
}

type cfnParameter struct {
	ParameterKey   string `xml:"ParameterKey"`
	ParameterValue string `xml:"ParameterValue"`
}

type cfnOutput struct {
	OutputKey   string `xml:"OutputKey"`
	OutputValue string `xml:"OutputValue"`
}

func (s *Stack) wire() cfnStack {
	parsed, _ := parseStackARN(s.ARN)
	out := cfnStack{StackID: s.ARN, StackName: parsed.name, StackStatus: s.Status,
		CreationTime:     s.CreationTime.UTC().Format("2006-01-02T15:04:05.000Z"),
		NotificationARNs: cfnMembers{Members: slices.Clone(s.NotificationARNs)}}
	for _, k := range slices.Sorted(maps.Keys(s.Parameters)) {
		out.Parameters = append(out.Parameters, cfnParameter{ParameterKey: k, ParameterValue: s.Parameters[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Outputs)) {
		out.Outputs = append(out.Outputs, cfnOutput{OutputKey: k, OutputValue: s.Outputs[k]})
	}
	return out
}

// serveCloudFormation answers DescribeStacks. A role may describe stacks in
// its own account only (only Role.StackARN when set); a stack that does not
// exist in the signing region is ValidationError.
func (a *AWS) serveCloudFormation(w http.ResponseWriter, r *http.Request) {
	params, body, err := readQuery(r)
	if err != nil {
		writeQueryError(w, xmlnsCFN, http.StatusBadRequest, "MalformedQueryString", err.Error())
		return
	}
	op := params.Get("Action")
	if op != OpDescribeStacks || params.Get("Version") != cfnVersion {
		writeQueryError(w, xmlnsCFN, http.StatusBadRequest, "InvalidAction",
			fmt.Sprintf("Could not find operation %s for version %s", op, params.Get("Version")))
		return
	}
	if !a.wait(r.Context(), op) {
		return // the client gave up
	}
	c, region, fail := a.verifyHeaderSigned(r, body, "cloudformation")
	if fail != nil {
		a.record(op, "", region)
		queryAuthError(w, xmlnsCFN, fail)
		return
	}
	if f := a.record(op, c.principalARN, region); f != nil {
		writeQueryError(w, xmlnsCFN, f.Status, f.Code, f.Message)
		return
	}
	stacks, status, code, msg := a.describeStacks(c, region, params.Get("StackName"))
	if code != "" {
		writeQueryError(w, xmlnsCFN, status, code, msg)
		return
	}
	writeQueryResult(w, xmlnsCFN, op, describeStacksResult{Stacks: stacks})
}

func (a *AWS) describeStacks(c *credential, region, name string) (stacks []cfnStack, status int, code, msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	role := a.roles[c.principalARN]
	resource := name
	if !strings.HasPrefix(name, "arn:") {
		resource = fmt.Sprintf("arn:%s:cloudformation:%s:%s:stack/%s/*", Partition, region, c.account, name)
		if name == "" {
			resource = "*"
		}
	}
	denied := func() ([]cfnStack, int, string, string) {
		return nil, http.StatusForbidden, "AccessDenied", fmt.Sprintf(
			"User: %s is not authorized to perform: cloudformation:DescribeStacks on resource: %s because no identity-based policy allows the cloudformation:DescribeStacks action",
			c.callerARN(), resource)
	}
	if role == nil || slices.Contains(role.Deny, "cloudformation:DescribeStacks") {
		return denied()
	}
	var match []*Stack
	switch parsed, isARN := parseStackARN(name); {
	case name == "":
		if role.StackARN != "" {
			return denied()
		}
		for _, s := range a.stacks {
			if p, _ := parseStackARN(s.ARN); p.account == c.account && p.region == region {
				match = append(match, s)
			}
		}
	case isARN:
		if parsed.account != c.account || (role.StackARN != "" && role.StackARN != name) {
			return denied()
		}
		if s, ok := a.stacks[name]; ok && parsed.region == region {
			match = append(match, s)
		}
	default:
		if own, _ := parseStackARN(role.StackARN); role.StackARN != "" && (own.name != name || own.region != region) {
			return denied()
		}
		for _, s := range a.stacks {
			if p, _ := parseStackARN(s.ARN); p.account == c.account && p.region == region && p.name == name {
				match = append(match, s)
			}
		}
	}
	if name != "" && len(match) == 0 {
		return nil, http.StatusBadRequest, "ValidationError", fmt.Sprintf("Stack with id %s does not exist", name)
	}
	slices.SortFunc(match, func(x, y *Stack) int { return strings.Compare(x.ARN, y.ARN) })
	for _, s := range match {
		stacks = append(stacks, s.wire())
	}
	return stacks, http.StatusOK, "", ""
}

package awsfake

import (
	"context"
	"slices"
	"time"
)

// Operation names, as the SDK and IAM spell them; Fail, SetLatency, Calls
// and CallsBy take these.
const (
	OpAssumeRole                   = "AssumeRole"
	OpGetCallerIdentity            = "GetCallerIdentity"
	OpDescribeStacks               = "DescribeStacks"
	OpDescribeCluster              = "DescribeCluster"
	OpCreateAccessEntry            = "CreateAccessEntry"
	OpDescribeAccessEntry          = "DescribeAccessEntry"
	OpDeleteAccessEntry            = "DeleteAccessEntry"
	OpListAccessEntries            = "ListAccessEntries"
	OpListAssociatedAccessPolicies = "ListAssociatedAccessPolicies"
	OpAssociateAccessPolicy        = "AssociateAccessPolicy"
	OpDisassociateAccessPolicy     = "DisassociateAccessPolicy"
)

// opService maps each operation to the service whose wire format its errors use.
var opService = map[string]string{
	OpAssumeRole: "sts", OpGetCallerIdentity: "sts", OpDescribeStacks: "cloudformation",
	OpDescribeCluster: "eks", OpCreateAccessEntry: "eks", OpDescribeAccessEntry: "eks",
	OpDeleteAccessEntry: "eks", OpListAccessEntries: "eks", OpListAssociatedAccessPolicies: "eks",
	OpAssociateAccessPolicy: "eks", OpDisassociateAccessPolicy: "eks",
}

// Always, as a Fault's Times, makes the fault permanent until ClearFaults.
const Always = -1

// Fault is an error an operation answers instead of doing its work, after
// the caller is authenticated and the call counted.
type Fault struct {
	// Times is how many calls fail (Always: every call).
	Times int
	// Code is the error code ("Throttling", "ThrottlingException", "InternalFailure", ...).
	Code string
	// Status is the HTTP status (400 for STS Throttling, 429 for EKS ThrottlingException, 500, ...).
	Status int
	// Message is the error message (default: a generic one).
	Message string
	// Principal limits the fault to calls by this role ARN (for AssumeRole:
	// of this role ARN); empty matches every caller.
	Principal string
}

// Call is one recorded request.
type Call struct {
	Op string
	// Principal is the caller's role ARN (the target role for AssumeRole, the
	// base identity's ARN for its own calls), empty when authentication failed.
	Principal string
	Region    string
	// Policy is the access policy ARN of an AssociateAccessPolicy or
	// DisassociateAccessPolicy call, so tests can assert the order of a
	// level switch's writes; empty for other operations.
	Policy string
	At     time.Time
}

// Fail makes the next times calls of op answer code with status.
func (a *AWS) Fail(op string, times int, code string, status int) {
	a.FailWith(op, Fault{Times: times, Code: code, Status: status})
}

// FailWith queues a fault for op; queued faults apply in order.
func (a *AWS) FailWith(op string, f Fault) {
	if _, ok := opService[op]; !ok {
		panic("awsfake: unknown operation " + op)
	}
	if f.Times == 0 {
		return
	}
	if f.Times < 0 {
		f.Times = Always
	}
	if f.Message == "" {
		f.Message = "injected fault " + f.Code
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults[op] = append(a.faults[op], &f)
}

// FailPropagation makes the next times CreateAccessEntry calls fail as EKS
// does for a role IAM has not propagated yet: InvalidParameterException (400)
// "The specified principalArn is invalid: invalid principal".
func (a *AWS) FailPropagation(times int) {
	a.FailWith(OpCreateAccessEntry, Fault{Times: times, Code: "InvalidParameterException", Status: 400,
		Message: msgInvalidPrincipal})
}

// ClearFaults removes every queued fault.
func (a *AWS) ClearFaults() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = map[string][]*Fault{}
}

// ClearFaultsFor removes the queued faults limited to principal (see
// Fault.Principal) and leaves the others, so tests running in parallel,
// each with its own customer role, clear only their own.
func (a *AWS) ClearFaultsFor(principal string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for op, queue := range a.faults {
		a.faults[op] = slices.DeleteFunc(queue, func(f *Fault) bool { return f.Principal == principal })
	}
}

// SetLatency delays every call of op by d before it is handled (0 removes
// the delay). A request whose client is seen to give up meanwhile (its
// context ends) is dropped unhandled and unrecorded, like a request that
// never reached AWS; a request with a body is not seen to give up before
// the delay ends (Go's server notices a closed connection only once the
// body is read), and is handled.
func (a *AWS) SetLatency(op string, d time.Duration) {
	if _, ok := opService[op]; !ok {
		panic("awsfake: unknown operation " + op)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.latency[op] = d
}

// Calls is how many requests of op reached the fake, failed ones included.
func (a *AWS) Calls(op string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// CallsBy is how many requests of op principal made (for AssumeRole: how
// many asked for role principal).
func (a *AWS) CallsBy(op, principal string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c.Op == op && c.Principal == principal {
			n++
		}
	}
	return n
}

// CallLog returns every recorded request in arrival order.
func (a *AWS) CallLog() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// ResetCalls forgets the recorded requests.
func (a *AWS) ResetCalls() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = nil
}

// wait sleeps for op's latency, or until ctx ends; false means ctx ended
// and the request must be dropped.
func (a *AWS) wait(ctx context.Context, op string) bool {
	a.mu.Lock()
	d := a.latency[op]
	a.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// record counts a call and returns the fault it must answer, if any.
func (a *AWS) record(op, principal, region string) *Fault {
	return a.recordCall(Call{Op: op, Principal: principal, Region: region})
}

// recordCall is record for a call with more detail than its operation.
func (a *AWS) recordCall(c Call) *Fault {
	a.mu.Lock()
	defer a.mu.Unlock()
	c.At = a.now()
	a.calls = append(a.calls, c)
	if c.Principal == "" {
		return nil
	}
	op := c.Op
	queue := a.faults[op]
	for i, f := range queue {
		if f.Principal != "" && f.Principal != c.Principal {
			continue
		}
		hit := *f
		if f.Times != Always {
			f.Times--
			if f.Times <= 0 {
				a.faults[op] = append(queue[:i:i], queue[i+1:]...)
			}
		}
		return &hit
	}
	return nil
}

package awsfake

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

const msgInvalidPrincipal = "The specified principalArn is invalid: invalid principal"

// eksError is an error answer in restJson1 form: X-Amzn-ErrorType plus a
// JSON body with __type and message.
type eksError struct {
	status        int
	code, message string
}

func (e *eksError) write(w http.ResponseWriter) {
	id := uuid.NewString()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", e.code)
	w.Header().Set("X-Amzn-Requestid", id)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.message})
}

func errNotFound(msg string) *eksError {
	return &eksError{http.StatusNotFound, "ResourceNotFoundException", msg}
}

func errInvalidParameter(msg string) *eksError {
	return &eksError{http.StatusBadRequest, "InvalidParameterException", msg}
}

func eksAuthError(f *authFailure) *eksError {
	switch f.kind {
	case authMissing:
		return &eksError{http.StatusForbidden, "MissingAuthenticationTokenException", f.msg}
	case authUnknown:
		return &eksError{http.StatusForbidden, "UnrecognizedClientException", f.msg}
	case authExpired:
		return &eksError{http.StatusForbidden, "ExpiredTokenException", f.msg}
	}
	return &eksError{http.StatusForbidden, "InvalidSignatureException", f.msg}
}

// epoch is a JSON timestamp in epoch seconds, as restJson1 sends them.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(time.Time(t).UnixMilli())/1000, 'f', -1, 64)), nil
}

// eksRequest is a routed EKS call.
type eksRequest struct {
	op                         string
	cluster, principal, policy string
	body                       []byte
	caller                     *credential
	region                     string
}

// route maps method and escaped path to an operation and its labels.
// Labels are percent-escaped by the SDK, '/' and ':' included, so a role
// ARN with a path is one segment.
func route(method, escapedPath string) (op string, labels []string, ok bool) {
	segs := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return "", nil, false
		}
		segs[i] = u
	}
	if len(segs) < 2 || segs[0] != "clusters" {
		return "", nil, false
	}
	at := func(i int, s string) bool { return len(segs) > i && segs[i] == s }
	switch {
	case len(segs) == 2 && method == http.MethodGet:
		return OpDescribeCluster, segs[1:], true
	case len(segs) == 3 && at(2, "access-entries") && method == http.MethodPost:
		return OpCreateAccessEntry, segs[1:2], true
	case len(segs) == 3 && at(2, "access-entries") && method == http.MethodGet:
		return OpListAccessEntries, segs[1:2], true
	case len(segs) == 4 && at(2, "access-entries") && method == http.MethodGet:
		return OpDescribeAccessEntry, []string{segs[1], segs[3]}, true
	case len(segs) == 4 && at(2, "access-entries") && method == http.MethodDelete:
		return OpDeleteAccessEntry, []string{segs[1], segs[3]}, true
	case len(segs) == 5 && at(2, "access-entries") && at(4, "access-policies") && method == http.MethodGet:
		return OpListAssociatedAccessPolicies, []string{segs[1], segs[3]}, true
	case len(segs) == 5 && at(2, "access-entries") && at(4, "access-policies") && method == http.MethodPost:
		return OpAssociateAccessPolicy, []string{segs[1], segs[3]}, true
	case len(segs) == 6 && at(2, "access-entries") && at(4, "access-policies") && method == http.MethodDelete:
		return OpDisassociateAccessPolicy, []string{segs[1], segs[3], segs[5]}, true
	}
	return "", nil, false
}

// serveEKS answers the EKS operations the product calls (and
// ListAccessEntries, which the template does not grant).
func (a *AWS) serveEKS(w http.ResponseWriter, r *http.Request) {
	op, labels, ok := route(r.Method, r.URL.EscapedPath())
	if !ok {
		(&eksError{http.StatusNotFound, "UnknownOperationException",
			fmt.Sprintf("awsfake EKS: no operation for %s %s", r.Method, r.URL.EscapedPath())}).write(w)
		return
	}
	if !a.wait(r.Context(), op) {
		return // the client gave up
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		(&eksError{http.StatusBadRequest, "BadRequestException", err.Error()}).write(w)
		return
	}
	c, region, fail := a.verifyHeaderSigned(r, body, "eks")
	call := Call{Op: op, Region: region, Policy: callPolicy(op, labels, body)}
	if fail != nil {
		a.recordCall(call)
		eksAuthError(fail).write(w)
		return
	}
	call.Principal = c.principalARN
	if f := a.recordCall(call); f != nil {
		(&eksError{f.Status, f.Code, f.Message}).write(w)
		return
	}
	req := &eksRequest{op: op, cluster: labels[0], body: body, caller: c, region: region}
	if len(labels) > 1 {
		req.principal = labels[1]
	}
	if len(labels) > 2 {
		req.policy = labels[2]
	}
	out, changed, eerr := a.handleEKS(req)
	if eerr != nil {
		eerr.write(w)
		return
	}
	if changed != "" {
		a.notify(changed)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	_ = json.NewEncoder(w).Encode(out)
}

// callPolicy is the access policy ARN an association call names: the
// request body's for AssociateAccessPolicy, the path's for
// DisassociateAccessPolicy.
func callPolicy(op string, labels []string, body []byte) string {
	switch op {
	case OpAssociateAccessPolicy:
		var in associateAccessPolicyInput
		_ = json.Unmarshal(body, &in)
		return in.PolicyArn
	case OpDisassociateAccessPolicy:
		if len(labels) > 2 {
			return labels[2]
		}
	}
	return ""
}

type createAccessEntryInput struct {
	PrincipalArn     string            `json:"principalArn"`
	KubernetesGroups []string          `json:"kubernetesGroups"`
	Tags             map[string]string `json:"tags"`
	Username         string            `json:"username"`
	Type             string            `json:"type"`
}

type accessScope struct {
	Type       string   `json:"type"`
	Namespaces []string `json:"namespaces,omitempty"`
}

type associateAccessPolicyInput struct {
	PolicyArn   string       `json:"policyArn"`
	AccessScope *accessScope `json:"accessScope"`
}

// handleEKS runs an authenticated call under the lock; changed is the ARN
// of a cluster whose access changed.
func (a *AWS) handleEKS(req *eksRequest) (out any, changed string, err *eksError) {
	var create createAccessEntryInput
	var assoc associateAccessPolicyInput
	var ask *accessRequest
	switch req.op {
	case OpCreateAccessEntry:
		if e := json.Unmarshal(req.body, &create); e != nil {
			return nil, "", &eksError{http.StatusBadRequest, "SerializationException", e.Error()}
		}
	case OpAssociateAccessPolicy:
		if e := json.Unmarshal(req.body, &assoc); e != nil {
			return nil, "", &eksError{http.StatusBadRequest, "SerializationException", e.Error()}
		}
		ask = &accessRequest{policyARN: assoc.PolicyArn}
		if assoc.AccessScope != nil {
			ask.scopeType, ask.namespaces = assoc.AccessScope.Type, assoc.AccessScope.Namespaces
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	arn := ClusterARN(req.region, req.caller.account, req.cluster)
	role := a.roles[req.caller.principalARN]
	if role == nil || !role.allows("eks:"+req.op, ask) {
		return nil, "", &eksError{http.StatusForbidden, "AccessDeniedException", fmt.Sprintf(
			"User: %s is not authorized to perform: eks:%s on resource: %s", req.caller.callerARN(), req.op, arn)}
	}
	c, ok := a.clusters[arn]
	if !ok {
		return nil, "", errNotFound("No cluster found for name: " + req.cluster + ".")
	}
	now := a.now()
	switch req.op {
	case OpDescribeCluster:
		return map[string]any{"cluster": c.wire()}, "", nil
	case OpListAccessEntries:
		return map[string]any{"accessEntries": slices.Sorted(maps.Keys(c.entries))}, "", nil
	case OpCreateAccessEntry:
		out, err := a.createAccessEntry(c, create, now)
		if err != nil {
			return nil, "", err
		}
		return out, arn, nil
	}

	e, ok := c.entries[req.principal]
	if !ok {
		return nil, "", errNotFound("The specified access entry resource could not be found.")
	}
	switch req.op {
	case OpDescribeAccessEntry:
		return map[string]any{"accessEntry": c.wireEntry(e)}, "", nil
	case OpDeleteAccessEntry:
		delete(c.entries, req.principal)
		return struct{}{}, arn, nil
	case OpListAssociatedAccessPolicies:
		return map[string]any{"clusterName": c.Name, "principalArn": e.PrincipalARN,
			"associatedAccessPolicies": wirePolicies(e.sortedPolicies())}, "", nil
	case OpAssociateAccessPolicy:
		p, err := associate(e, assoc, now)
		if err != nil {
			return nil, "", err
		}
		return map[string]any{"clusterName": c.Name, "principalArn": e.PrincipalARN,
			"associatedAccessPolicy": wirePolicy(p)}, arn, nil
	case OpDisassociateAccessPolicy:
		if _, ok := e.policies[req.policy]; !ok {
			return nil, "", errNotFound("The specified policy is not associated with this access entry.")
		}
		delete(e.policies, req.policy)
		return struct{}{}, arn, nil
	}
	return nil, "", &eksError{http.StatusNotFound, "UnknownOperationException", req.op}
}

func (a *AWS) createAccessEntry(c *cluster, in createAccessEntryInput, now time.Time) (any, *eksError) {
	if c.AuthenticationMode != AuthModeAPI && c.AuthenticationMode != AuthModeAPIConfigMap {
		return nil, &eksError{http.StatusBadRequest, "InvalidRequestException",
			"The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] to perform this operation."}
	}
	if strings.Contains(in.PrincipalArn, ":assumed-role/") {
		return nil, errInvalidParameter("The specified principalArn is invalid: an assumed-role session ARN cannot be a principal; use the role ARN")
	}
	_, isRole := parseRoleARN(in.PrincipalArn)
	if isRole && a.roles[in.PrincipalArn] == nil || !isRole && !isUserARN(in.PrincipalArn) {
		return nil, errInvalidParameter(msgInvalidPrincipal)
	}
	if _, ok := c.entries[in.PrincipalArn]; ok {
		return nil, &eksError{http.StatusConflict, "ResourceInUseException",
			"The specified access entry resource is already in use on this cluster."}
	}
	e := c.newEntry(AccessEntry{PrincipalARN: in.PrincipalArn, Type: in.Type, KubernetesGroups: in.KubernetesGroups,
		Username: in.Username}, now)
	c.entries[in.PrincipalArn] = e
	return map[string]any{"accessEntry": c.wireEntry(e)}, nil
}

func isUserARN(arn string) bool {
	p := strings.SplitN(arn, ":", 6)
	return len(p) == 6 && p[0] == "arn" && p[2] == "iam" && isAccountID(p[4]) && strings.HasPrefix(p[5], "user/")
}

func associate(e *entry, in associateAccessPolicyInput, now time.Time) (*Association, *eksError) {
	name, ok := strings.CutPrefix(in.PolicyArn, PolicyARN(Partition, ""))
	if !ok || !slices.Contains(knownPolicies, name) {
		return nil, errInvalidParameter("The specified policyArn is invalid: " + in.PolicyArn)
	}
	if in.AccessScope == nil {
		return nil, errInvalidParameter("accessScope is required")
	}
	switch in.AccessScope.Type {
	case ScopeCluster:
		if len(in.AccessScope.Namespaces) > 0 {
			return nil, errInvalidParameter("Namespaces can only be specified with the namespace access scope type")
		}
	case ScopeNamespace:
		if len(in.AccessScope.Namespaces) == 0 {
			return nil, errInvalidParameter("Namespaces must be specified with the namespace access scope type")
		}
	default:
		return nil, errInvalidParameter("The access scope type must be cluster or namespace")
	}
	if e.Type != "STANDARD" {
		return nil, &eksError{http.StatusBadRequest, "InvalidRequestException",
			"Access policies can only be associated with STANDARD access entries"}
	}
	p, ok := e.policies[in.PolicyArn]
	if !ok {
		p = &Association{PolicyARN: in.PolicyArn, AssociatedAt: now}
		e.policies[in.PolicyArn] = p
	}
	p.ScopeType = in.AccessScope.Type
	p.Namespaces = slices.Clone(in.AccessScope.Namespaces)
	p.ModifiedAt = now
	e.ModifiedAt = now
	out := *p
	return &out, nil
}

func (c *cluster) wire() map[string]any {
	return map[string]any{
		"name": c.Name, "arn": c.arn, "createdAt": epoch(c.createdAt), "version": c.Version,
		"endpoint": c.Endpoint, "status": c.Status, "platformVersion": "eks.1",
		"certificateAuthority": map[string]any{"data": c.CAData},
		"accessConfig":         map[string]any{"authenticationMode": c.AuthenticationMode},
	}
}

func (c *cluster) wireEntry(e *entry) map[string]any {
	groups := e.KubernetesGroups
	if groups == nil {
		groups = []string{}
	}
	return map[string]any{
		"clusterName": c.Name, "principalArn": e.PrincipalARN, "kubernetesGroups": groups,
		"accessEntryArn": e.arn, "createdAt": epoch(e.CreatedAt), "modifiedAt": epoch(e.ModifiedAt),
		"tags": map[string]string{}, "username": e.Username, "type": e.Type,
	}
}

func wirePolicy(p *Association) map[string]any {
	scope := map[string]any{"type": p.ScopeType}
	if p.ScopeType == ScopeNamespace {
		scope["namespaces"] = p.Namespaces
	} else {
		scope["namespaces"] = []string{}
	}
	return map[string]any{"policyArn": p.PolicyARN, "accessScope": scope,
		"associatedAt": epoch(p.AssociatedAt), "modifiedAt": epoch(p.ModifiedAt)}
}

func wirePolicies(ps []Association) []map[string]any {
	out := []map[string]any{}
	for i := range ps {
		out = append(out, wirePolicy(&ps[i]))
	}
	return out
}

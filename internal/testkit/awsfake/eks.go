package awsfake

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Names of EKS access policies; PolicyARN makes their ARNs.
const (
	PolicyClusterAdmin = "AmazonEKSClusterAdminPolicy"
	PolicyAdmin        = "AmazonEKSAdminPolicy"
	PolicyEdit         = "AmazonEKSEditPolicy"
	PolicyView         = "AmazonEKSViewPolicy"
)

var knownPolicies = []string{PolicyClusterAdmin, PolicyAdmin, PolicyEdit, PolicyView}

// PolicyARN is the ARN of an EKS access policy in a partition:
// arn:<partition>:eks::aws:cluster-access-policy/<name>.
func PolicyARN(partition, name string) string {
	return "arn:" + partition + ":eks::aws:cluster-access-policy/" + name
}

// Access scope types.
const (
	ScopeCluster   = "cluster"
	ScopeNamespace = "namespace"
)

// Cluster authentication modes.
const (
	AuthModeAPI          = "API"
	AuthModeAPIConfigMap = "API_AND_CONFIG_MAP"
	AuthModeConfigMap    = "CONFIG_MAP"
)

// Cluster is an EKS cluster in a customer account.
type Cluster struct {
	Region, Account, Name string
	// Status defaults to ACTIVE.
	Status string
	// AuthenticationMode defaults to API_AND_CONFIG_MAP.
	AuthenticationMode string
	// Endpoint is the API server URL DescribeCluster reports.
	Endpoint string
	// CAData is certificateAuthority.data: the base64 of the CA PEM.
	CAData string
	// Version defaults to 1.33.
	Version string
}

// AccessEntry is an EKS access entry: one per principal on a cluster.
type AccessEntry struct {
	PrincipalARN string
	// Type defaults to STANDARD.
	Type             string
	KubernetesGroups []string
	// Username defaults to what EKS derives from the principal.
	Username              string
	CreatedAt, ModifiedAt time.Time
	// Policies are the entry's associated access policies (set on
	// AddAccessEntry for pre-existing ones; filled in by the getters).
	Policies []Association
}

// Association is an access policy associated with an access entry.
type Association struct {
	PolicyARN string
	// ScopeType is ScopeCluster or ScopeNamespace.
	ScopeType string
	// Namespaces are the scope's namespaces (patterns like dev-* allowed).
	Namespaces               []string
	AssociatedAt, ModifiedAt time.Time
}

type cluster struct {
	Cluster
	arn       string
	createdAt time.Time
	entries   map[string]*entry // by principal ARN
}

type entry struct {
	AccessEntry
	arn      string
	policies map[string]*Association // by policy ARN
}

// ClusterARN is arn:aws:eks:<region>:<account>:cluster/<name>.
func ClusterARN(region, account, name string) string {
	return fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", Partition, region, account, name)
}

// AddCluster adds a cluster, or updates an existing one's attributes
// keeping its access entries, and returns its ARN.
func (a *AWS) AddCluster(c Cluster) string {
	if c.Status == "" {
		c.Status = "ACTIVE"
	}
	if c.AuthenticationMode == "" {
		c.AuthenticationMode = AuthModeAPIConfigMap
	}
	if c.Version == "" {
		c.Version = "1.33"
	}
	arn := ClusterARN(c.Region, c.Account, c.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.clusters[arn]; ok {
		old.Cluster = c
		return arn
	}
	a.clusters[arn] = &cluster{Cluster: c, arn: arn, createdAt: a.now(), entries: map[string]*entry{}}
	return arn
}

// Cluster returns a cluster's attributes.
func (a *AWS) Cluster(clusterARN string) (Cluster, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.clusters[clusterARN]
	if !ok {
		return Cluster{}, false
	}
	return c.Cluster, true
}

// AddAccessEntry adds or replaces an access entry with its policies, as if
// someone else had created it (a foreign entry). It panics on an unknown
// cluster.
func (a *AWS) AddAccessEntry(clusterARN string, e AccessEntry) {
	a.mu.Lock()
	c, ok := a.clusters[clusterARN]
	if !ok {
		a.mu.Unlock()
		panic("awsfake: AddAccessEntry: unknown cluster " + clusterARN)
	}
	now := a.now()
	en := c.newEntry(e, now)
	for _, p := range e.Policies {
		p.Namespaces = slices.Clone(p.Namespaces)
		if p.AssociatedAt.IsZero() {
			p.AssociatedAt = now
		}
		if p.ModifiedAt.IsZero() {
			p.ModifiedAt = p.AssociatedAt
		}
		en.policies[p.PolicyARN] = &p
	}
	c.entries[e.PrincipalARN] = en
	a.mu.Unlock()
	a.notify(clusterARN)
}

// RemoveAccessEntry deletes a principal's entry as a customer could (in the
// console), without a call being recorded.
func (a *AWS) RemoveAccessEntry(clusterARN, principalARN string) {
	a.mu.Lock()
	c, ok := a.clusters[clusterARN]
	if ok {
		delete(c.entries, principalARN)
	}
	a.mu.Unlock()
	a.notify(clusterARN)
}

// newEntry builds an entry with EKS's defaults (not yet stored).
func (c *cluster) newEntry(e AccessEntry, now time.Time) *entry {
	e.KubernetesGroups = slices.Clone(e.KubernetesGroups)
	e.Policies = nil
	if e.Type == "" {
		e.Type = "STANDARD"
	}
	if e.Username == "" {
		e.Username = defaultUsername(e.PrincipalARN)
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.ModifiedAt.IsZero() {
		e.ModifiedAt = e.CreatedAt
	}
	kind, name := "user", e.PrincipalARN
	if r, ok := parseRoleARN(e.PrincipalARN); ok {
		kind, name = "role", r.account+"/"+r.name
	}
	return &entry{
		AccessEntry: e,
		arn: fmt.Sprintf("arn:%s:eks:%s:%s:access-entry/%s/%s/%s/%s", Partition, c.Region, c.Account, c.Name,
			kind, name, strings.ToLower(randomID(8))),
		policies: map[string]*Association{},
	}
}

// defaultUsername is the Kubernetes user EKS gives a STANDARD entry: the
// session pattern for a role, the ARN for anything else.
func defaultUsername(principal string) string {
	if r, ok := parseRoleARN(principal); ok {
		return fmt.Sprintf("arn:%s:sts::%s:assumed-role/%s/{{SessionName}}", r.partition, r.account, r.name)
	}
	return principal
}

func (e *entry) snapshot() AccessEntry {
	out := e.AccessEntry
	out.KubernetesGroups = slices.Clone(e.KubernetesGroups)
	out.Policies = e.sortedPolicies()
	return out
}

func (e *entry) sortedPolicies() []Association {
	var ps []Association
	for _, k := range slices.Sorted(maps.Keys(e.policies)) {
		p := *e.policies[k]
		p.Namespaces = slices.Clone(p.Namespaces)
		ps = append(ps, p)
	}
	return ps
}

// AccessEntries returns a cluster's access entries with their policies,
// sorted by principal ARN.
func (a *AWS) AccessEntries(clusterARN string) []AccessEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.clusters[clusterARN]
	if !ok {
		return nil
	}
	var out []AccessEntry
	for _, k := range slices.Sorted(maps.Keys(c.entries)) {
		out = append(out, c.entries[k].snapshot())
	}
	return out
}

// AccessEntry returns one access entry with its policies.
func (a *AWS) AccessEntry(clusterARN, principalARN string) (AccessEntry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.clusters[clusterARN]
	if !ok {
		return AccessEntry{}, false
	}
	e, ok := c.entries[principalARN]
	if !ok {
		return AccessEntry{}, false
	}
	return e.snapshot(), true
}

// Associations returns the policies associated with a principal's entry on
// a cluster, sorted by policy ARN (nil without an entry).
func (a *AWS) Associations(clusterARN, principalARN string) []Association {
	e, _ := a.AccessEntry(clusterARN, principalARN)
	return e.Policies
}

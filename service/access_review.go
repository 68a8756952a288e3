package service

import (
	"context"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// AccessQuestion asks whether Kukie's connection to a cluster may do
// something (a SelfSubjectAccessReview's resource attributes).
type AccessQuestion struct {
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name,omitempty"`
}

// AccessAnswer is the cluster's answer.
type AccessAnswer struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
}

// AccessReviewer asks a cluster through Kukie's own connection.
type AccessReviewer interface {
	CanI(ctx context.Context, c Cluster, q AccessQuestion) (AccessAnswer, error)
}

// AccessReviews answers "can Kukie do this here?" so the agent learns a
// LIMITED cluster's boundary before it plans a change. Answers are cached
// per (cluster, question) for the snapshot TTL, and forgotten when the
// cluster's access changes (a level switch); the cache is bounded.
type AccessReviews struct {
	Clusters ClusterStore
	Reviewer AccessReviewer
	Now      func() time.Time
	TTL      time.Duration
	// Observe counts each review by outcome (allowed, denied, error,
	// cached); nil counts nothing.
	Observe func(outcome string)
	cache   *lru.Cache[string, cachedAnswer]
}

type cachedAnswer struct {
	AccessAnswer
	at time.Time
}

// NewAccessReviews returns the use case with a cache of at most size answers.
func NewAccessReviews(clusters ClusterStore, reviewer AccessReviewer, size int, now func() time.Time) (*AccessReviews, error) {
	cache, err := lru.New[string, cachedAnswer](size)
	if err != nil {
		return nil, err
	}
	return &AccessReviews{Clusters: clusters, Reviewer: reviewer, Now: now, TTL: 10 * time.Second, cache: cache}, nil
}

var verbs = map[string]bool{"get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true,
	"delete": true, "deletecollection": true, "impersonate": true, "bind": true, "escalate": true, "use": true}

// CanI answers q for one of the team's clusters (any kind).
func (s *AccessReviews) CanI(ctx context.Context, p Principal, clusterID string, q AccessQuestion) (AccessAnswer, error) {
	var v ValidationErrors
	if !verbs[q.Verb] && q.Verb != "*" {
		v.Add("verb", "must be a Kubernetes verb such as get, list, create, patch, delete")
	}
	checkText(&v, "resource", q.Resource, true, maxGroupLength)
	checkText(&v, "group", q.Group, false, maxGroupLength)
	checkText(&v, "namespace", q.Namespace, false, maxNamespaceLength)
	checkText(&v, "name", q.Name, false, maxNameLength)
	if err := v.Err(); err != nil {
		return AccessAnswer{}, err
	}
	c, err := s.Clusters.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return AccessAnswer{}, err
	}
	if !c.Readable() {
		return AccessAnswer{}, ErrNotReadable(c)
	}
	return s.Review(ctx, c, q)
}

// Review asks cluster c (already the caller's, readable) through Kukie's
// connection, from the cache when the same question was answered within
// the TTL.
func (s *AccessReviews) Review(ctx context.Context, c Cluster, q AccessQuestion) (AccessAnswer, error) {
	// The cluster's level and its last access change are part of the key:
	// an answer given before a level switch is not served after it.
	key := strings.Join([]string{c.Key(), string(c.AccessLevel), strconv.FormatInt(c.UpdatedAt.UnixNano(), 10),
		q.Verb, q.Group, q.Resource, q.Subresource, q.Namespace, q.Name}, "\x00")
	if a, ok := s.cache.Get(key); ok && s.Now().Sub(a.at) < s.TTL {
		s.observe("cached")
		return a.AccessAnswer, nil
	}
	a, err := s.Reviewer.CanI(ctx, c, q)
	switch {
	case err != nil:
		s.observe("error")
		return AccessAnswer{}, err
	case a.Allowed:
		s.observe("allowed")
	default:
		s.observe("denied")
	}
	s.cache.Add(key, cachedAnswer{AccessAnswer: a, at: s.Now()})
	return a, nil
}

func (s *AccessReviews) observe(outcome string) {
	if s.Observe != nil {
		s.Observe(outcome)
	}
}

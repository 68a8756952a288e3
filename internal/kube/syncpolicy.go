package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kukie/gitops-server/service"
)

// schemaCacheTTL is how long a cluster's answer about its Application
// schema is kept (an Argo CD upgrade changes it rarely).
const schemaCacheTTL = 10 * time.Minute

// schemaCache is a cluster's answer about its Application schema.
type schemaCache struct {
	automatedEnabled bool
	at               time.Time
}

var errNoApplicationSchema = errors.New("the cluster publishes no schema for argoproj.io/v1alpha1 Application")

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// AutomatedEnabled reports whether the cluster's Application schema lists
// spec.syncPolicy.automated.enabled (Argo CD 3.1 and later), read from
// the API server's OpenAPI v3 discovery (any authenticated user may read
// it), else from the CRD object; kept per cluster connection.
func (r *Reader) AutomatedEnabled(ctx context.Context, c service.Cluster) (bool, error) {
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		return false, service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
	}
	cs.mu.Lock()
	if !cs.schema.at.IsZero() && time.Since(cs.schema.at) < schemaCacheTTL {
		ok := cs.schema.automatedEnabled
		cs.mu.Unlock()
		return ok, nil
	}
	cs.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	ok, err := openAPIAutomatedEnabled(cs)
	if err != nil {
		ok, err = crdAutomatedEnabled(ctx, cs)
	}
	if err != nil {
		return false, objectError(ctx, ctx, err)
	}
	cs.mu.Lock()
	cs.schema = schemaCache{automatedEnabled: ok, at: time.Now()}
	cs.mu.Unlock()
	return ok, nil
}

func openAPIAutomatedEnabled(cs *clientSet) (bool, error) {
	paths, err := cs.disc.OpenAPIV3().Paths()
	if err != nil {
		return false, err
	}
	gv, ok := paths["apis/argoproj.io/v1alpha1"]
	if !ok {
		return false, errNoApplicationSchema
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		return false, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return false, err
	}
	for name, s := range doc.Components.Schemas {
		if strings.HasSuffix(name, ".argoproj.v1alpha1.Application") {
			var v any
			if err := json.Unmarshal(s, &v); err != nil {
				return false, err
			}
			return hasEnabled(v), nil
		}
	}
	return false, errNoApplicationSchema
}

func crdAutomatedEnabled(ctx context.Context, cs *clientSet) (bool, error) {
	crd, err := cs.dyn.Resource(crds).Get(ctx, "applications.argoproj.io", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m["name"] == "v1alpha1" {
			s, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema")
			return hasEnabled(s), nil
		}
	}
	return false, errNoApplicationSchema
}

// hasEnabled reports spec.syncPolicy.automated.enabled in an object schema.
func hasEnabled(schema any) bool {
	cur := schema
	for _, p := range []string{"spec", "syncPolicy", "automated", "enabled"} {
		m, _ := cur.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		next, ok := props[p]
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// Package kube is the Kubernetes adapter: it connects to clusters and reads
// Argo CD Applications with client-go, classifying failures so the user is
// told the right next step.
package kube

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/service"
)

// StaticCluster is one entry of the static clusters file.
type StaticCluster struct {
	ID              string   `json:"id"`
	Team            string   `json:"team"`
	Name            string   `json:"name"`
	Kubeconfig      string   `json:"kubeconfig"`
	Context         string   `json:"context"`
	AccessLevel     string   `json:"access_level"`
	Namespaces      []string `json:"namespaces"`
	ArgoCDNamespace string   `json:"argocd_namespace"`
}

// StaticConnector connects to clusters described by kubeconfig files
// (development and non-EKS clusters).
type StaticConnector struct {
	configs map[string]*rest.Config // by service.Cluster.Key
}

var _ ClusterConnector = (*StaticConnector)(nil)

// LoadStaticClusters reads the static clusters file (YAML:
// `clusters: [{id, team, name, kubeconfig, context, access_level,
// namespaces, argocd_namespace}]`), loads each kubeconfig, and returns the
// clusters to upsert and a connector for them.
func LoadStaticClusters(path string) ([]service.Cluster, *StaticConnector, error) {
	conn := &StaticConnector{configs: map[string]*rest.Config{}}
	if path == "" {
		return nil, conn, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var file struct {
		Clusters []StaticCluster `json:"clusters"`
	}
	if err := yaml.UnmarshalStrict(b, &file); err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var out []service.Cluster
	seen := map[string]bool{}
	for i, sc := range file.Clusters {
		where := fmt.Sprintf("%s: clusters[%d]", path, i)
		c, err := sc.cluster()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		key := c.Key()
		if seen[key] {
			return nil, nil, fmt.Errorf("%s: cluster %q of team %q appears twice", where, c.ID, c.TeamID)
		}
		seen[key] = true
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: sc.Kubeconfig}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: sc.Context}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: kubeconfig %s: %w", where, sc.Kubeconfig, err)
		}
		conn.configs[key] = cfg
		// The kubeconfig's server is the cluster's address, as Argo CD
		// hubs name it in destinations.
		c.Endpoint = cfg.Host
		out = append(out, c)
	}
	return out, conn, nil
}

func (sc StaticCluster) cluster() (service.Cluster, error) {
	c := service.Cluster{
		ID: strings.TrimSpace(sc.ID), TeamID: strings.TrimSpace(sc.Team), Name: sc.Name,
		Kind: service.ClusterStatic, AccessLevel: service.AccessLevel(strings.ToLower(sc.AccessLevel)),
		Namespaces: sc.Namespaces, ArgoCDNamespace: sc.ArgoCDNamespace,
	}
	switch {
	case c.ID == "" || c.TeamID == "":
		return c, fmt.Errorf("id and team are required")
	case !service.ValidClusterID(c.ID):
		return c, fmt.Errorf("id %q must be 1 to 128 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", c.ID)
	case sc.Kubeconfig == "":
		return c, fmt.Errorf("kubeconfig (a file path) is required")
	case c.AccessLevel != service.AccessFull && c.AccessLevel != service.AccessLimited:
		return c, fmt.Errorf("access_level must be full or limited")
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.ArgoCDNamespace == "" {
		c.ArgoCDNamespace = service.DefaultArgoCDNamespace
	}
	if c.Namespaces == nil {
		c.Namespaces = []string{}
	}
	return c, nil
}

// RESTConfig returns a copy of the cluster's configuration.
func (s *StaticConnector) RESTConfig(_ context.Context, c service.Cluster) (*rest.Config, error) {
	cfg, ok := s.configs[c.Key()]
	if !ok {
		return nil, fmt.Errorf("no connection configured for static cluster %q of team %q", c.ID, c.TeamID)
	}
	return rest.CopyConfig(cfg), nil
}

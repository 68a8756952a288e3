package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

// sandbox is a sandbox API server holding a number of Applications, with
// the admin's kubeconfig on disk for static clusters and an HTTP client
// with the admin's credentials for reading the server directly.
type sandbox struct {
	cluster *k8stest.Cluster
	apps    int
	dir     string // removed by stop
	kcPath  string
	admin   *http.Client
}

// startSandbox starts an API server with the 12 fixture apps plus
// generated ones up to apps.
func startSandbox(apps int) (*sandbox, error) {
	step(fmt.Sprintf("starting a sandbox API server with %d Applications", apps))
	cluster, err := k8stest.Start(k8stest.Options{ArgoCD: true})
	if err != nil {
		return nil, err
	}
	s := &sandbox{cluster: cluster, apps: apps}
	if err := s.setUp(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *sandbox) setUp() error {
	if err := addApps(s.cluster, s.apps-12); err != nil {
		return err
	}
	var err error
	if s.dir, err = os.MkdirTemp("", "kukie-bench"); err != nil {
		return err
	}
	kubeconfig, err := s.cluster.Kubeconfig(k8stest.UserAdmin)
	if err != nil {
		return err
	}
	s.kcPath = filepath.Join(s.dir, "admin.kubeconfig")
	if err := os.WriteFile(s.kcPath, kubeconfig, 0o600); err != nil {
		return err
	}
	s.admin, err = rest.HTTPClientFor(s.cluster.Config(k8stest.UserAdmin))
	return err
}

func (s *sandbox) stop() {
	_ = s.cluster.Stop()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// clustersFile writes a static clusters file in which every cluster is a
// FULL connection to this API server as its admin: ids[i] of teams[i].
func (s *sandbox) clustersFile(name string, ids, teams []string) (string, error) {
	var b strings.Builder
	b.WriteString("clusters:\n")
	for i, id := range ids {
		fmt.Fprintf(&b, "  - {id: %s, team: %s, kubeconfig: %s, access_level: full}\n", id, teams[i], s.kcPath)
	}
	path := filepath.Join(s.dir, name)
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// appLists is the API server's own count of Application LISTs
// (apiserver_request_total, every code and scope), read from its /metrics
// as the admin: the customer's side of the promise, whatever the servers
// count themselves.
func (s *sandbox) appLists() (float64, error) {
	body, err := s.read("/metrics")
	if err != nil {
		return 0, err
	}
	return sumSamples(body, "apiserver_request_total", `verb="LIST"`, `group="argoproj.io"`, `resource="applications"`)
}

// rawList is the LIST kukie-server makes, as a plain GET of every
// Application across namespaces (JSON, the whole body read), timed.
func (s *sandbox) rawList() (time.Duration, error) {
	start := time.Now()
	_, err := s.read("/apis/argoproj.io/v1alpha1/applications")
	return time.Since(start), err
}

// read GETs path on the API server as the admin and reads the whole body.
func (s *sandbox) read(path string) ([]byte, error) {
	req, err := http.NewRequest("GET", strings.TrimSuffix(s.cluster.Host(), "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.admin.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %d %.200s", path, res.StatusCode, body)
	}
	return body, err
}

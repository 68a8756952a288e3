package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
)

// Files the sandbox writes in its directory.
const (
	fileCA        = "ca.pem"        // the development CA the server trusts (SSL_CERT_FILE)
	fileServerEnv = "server.env"    // the server's environment, as `export` lines
	fileWorld     = "world.json"    // the stage reached and the values the printed lines use
	fileControl   = "control.sock"  // the control socket (stack-update, cluster)
	fileClusters  = "clusters.yaml" // the static clusters file, once the cluster runs
)

// Stages of the world, in the order they are reached.
const (
	stageGit     = "git"     // the Git world serves; the AWS fakes and the SNS stand-in run
	stageCluster = "cluster" // the sandbox cluster, its two EKS clusters and the AWS account are ready
)

// region is the sandbox AWS account's region (the product's own, Seoul).
const region = "ap-northeast-2"

// world is everything the sandbox runs: the Git world, the local AWS
// account (STS, EKS and CloudFormation stand-ins), the SNS stand-in behind
// its CONNECT proxy, and, after `cluster`, the sandbox cluster standing for
// the static clusters and two EKS clusters.
type world struct {
	dir, team, api, secret string

	ca   *snstest.Authority
	git  *gitWorld
	sns  *snstest.Host
	aws  *awsfake.AWS
	acct *awsAccount

	mu    sync.Mutex
	stage string
	vars  map[string]string
	stops []func() // run in reverse order by close

	// clusterMu serialises the cluster stage; clustersFile is set once it
	// has succeeded.
	clusterMu    sync.Mutex
	clustersFile string
}

// startWorld runs the Git, AWS and SNS worlds and writes the server's
// environment; the cluster waits for startCluster.
func startWorld(dir, team, api, secret string) (_ *world, err error) {
	w := &world{dir: dir, team: team, api: api, secret: secret, vars: map[string]string{}}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.ca, err = snstest.NewAuthority("kukie sandbox development CA"); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, fileCA), w.ca.PEM(), 0o644); err != nil {
		return nil, err
	}
	tlsCfg, err := w.ca.ServerTLS("127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	if w.git, err = startGitWorld(dir, tlsCfg); err != nil {
		return nil, err
	}
	w.stops = append(w.stops, w.git.stop)
	host, stop, err := snstest.NewHost(w.ca, snstest.HostOptions{})
	if err != nil {
		return nil, err
	}
	w.sns = host
	w.stops = append(w.stops, stop)
	f, stop := awsfake.New(awsfake.WithRegion(region))
	w.aws = f
	w.stops = append(w.stops, stop)
	if w.acct, err = newAWSAccount(); err != nil {
		return nil, err
	}
	if err := w.writeServerEnv(); err != nil {
		return nil, err
	}
	w.set(map[string]string{
		"GIT_URL": w.git.publicURL, "GIT_PRIVATE_URL": w.git.privateURL, "GIT_TOKEN": w.git.token,
		"GIT_COMMIT": w.git.head(), "GIT_FIRST_COMMIT": w.git.commits[0],
		"AWS_REGION": region, "AWS_ACCOUNT": w.acct.id, "ROLE_ARN": w.acct.role, "STACK_ARN": w.acct.stack,
		"EKS_CLUSTER": w.acct.clusters[0], "EKS_CLUSTER_2": w.acct.clusters[1],
	})
	return w, w.reach(stageGit)
}

// writeServerEnv writes what the server needs to reach this world, through
// an operator's settings only: the CA bundle (the Git server's and the SNS
// host's certificates), the proxy SNS is reached through, the AWS SDK's
// standard endpoint and credential variables, and the Git host allowed to
// the sandbox team.
func (w *world) writeServerEnv() error {
	// What would point the SDK elsewhere (a developer's own AWS profile or
	// session) is cleared: the server talks to the stand-ins only.
	unset := []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "HTTP_PROXY", "http_proxy"}
	env := map[string]string{
		"SSL_CERT_FILE":                   filepath.Join(w.dir, fileCA),
		"KUKIE_AWS_REGION":                region,
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": w.team + "=127.0.0.1",
		"AWS_CONFIG_FILE":                 "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE":     "/dev/null",
	}
	for k, v := range w.aws.Env() {
		env[k] = v
	}
	for _, kv := range w.sns.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by kukie-sandbox: the server's environment for this world (development only).\n")
	b.WriteString("unset " + strings.Join(unset, " ") + "\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	return writeFile(filepath.Join(w.dir, fileServerEnv), []byte(b.String()), 0o600)
}

// set adds values the printed lines use.
func (w *world) set(vars map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range vars {
		w.vars[k] = v
	}
}

// reach records stage in world.json, which make run and the test read.
func (w *world) reach(stage string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stage = stage
	b, err := json.MarshalIndent(map[string]any{"stage": stage, "vars": w.vars}, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(w.dir, fileWorld), append(b, '\n'), 0o600)
}

// close stops everything the world started, newest first.
func (w *world) close() {
	w.mu.Lock()
	stops := w.stops
	w.stops = nil
	w.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// writeFile writes a file whole: readers never see half of it.
func writeFile(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // a stale one keeps its old mode
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// apiCall is a JSON request to the server as the team's admin.
func (w *world) apiCall(ctx context.Context, method, path string, out any) error {
	return callAPI(ctx, w.api, w.secret, w.team, method, path, out)
}

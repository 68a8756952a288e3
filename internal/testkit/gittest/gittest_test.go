package gittest_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
)

func TestHelmRepo(t *testing.T) {
	h := gittest.NewHelmRepo(t, gittest.HelmOptions{Charts: []gittest.Chart{
		{Name: "web", Version: "1.2.3", Files: map[string]string{"templates/cm.yaml": "kind: ConfigMap\n", "values.yaml": "a: 1\n"}},
	}})
	get := func(url string) []byte {
		t.Helper()
		res, err := h.Client().Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", url, res.Status)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var index struct {
		Entries map[string][]struct {
			Version string   `json:"version"`
			Digest  string   `json:"digest"`
			URLs    []string `json:"urls"`
		} `json:"entries"`
	}
	if err := yaml.Unmarshal(get(h.URL+"/index.yaml"), &index); err != nil {
		t.Fatal(err)
	}
	e := index.Entries["web"]
	if len(e) != 1 || e[0].Version != "1.2.3" || len(e[0].URLs) != 1 {
		t.Fatalf("index entries = %+v", index.Entries)
	}
	archive := get(e[0].URLs[0])
	sum := sha256.Sum256(archive)
	if hex.EncodeToString(sum[:]) != e[0].Digest || h.Digests["web-1.2.3"] != e[0].Digest {
		t.Error("the index's digest is not the archive's")
	}
	zr, err := gzip.NewReader(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	if got := strings.Join(names, ","); got != "web/Chart.yaml,web/templates/cm.yaml,web/values.yaml" {
		t.Errorf("archive holds %s", got)
	}
	if c := h.Counts(); c.RefLists != 1 || c.Packs != 1 {
		t.Errorf("counts = %+v, want one index and one archive", c)
	}

	private := gittest.NewHelmRepo(t, gittest.HelmOptions{Username: "u", Password: "p"})
	res, err := private.Client().Get(private.URL + "/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous GET of a private repository: %s, want 401", res.Status)
	}
}

// TestHTTPStrictWants checks the harness with git itself: the strict server
// refuses a commit that is not a ref's tip; the permissive one sends it.
func TestHTTPStrictWants(t *testing.T) {
	repo := gittest.NewRepo(t)
	old := repo.Commit(t, map[string]string{"a": "1"}, "one")
	repo.Commit(t, map[string]string{"a": "2"}, "two")
	for _, allow := range []bool{false, true} {
		s := repo.ServeHTTP(t, gittest.HTTPOptions{Token: "tok", AllowAnyCommit: allow})
		dir := t.TempDir()
		url := strings.Replace(s.URL, "https://", "https://user:tok@", 1)
		git := func(args ...string) error {
			cmd := exec.Command("git", append([]string{"-c", "http.sslVerify=false", "-c", "protocol.version=0"}, args...)...)
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Logf("git %v: %s", args, out)
			}
			return err
		}
		if err := git("init", "--quiet"); err != nil {
			t.Fatal(err)
		}
		err := git("fetch", "--quiet", "--depth=1", url, old)
		if allow && err != nil {
			t.Errorf("AllowAnyCommit: fetching a commit by id failed: %v", err)
		}
		if !allow && err == nil {
			t.Error("strict: fetching a commit by id succeeded")
		}
		if !allow && s.Counts().Refused == 0 {
			t.Error("strict: no refusal counted")
		}
	}
}

// TestServeOutsideTest drives the non-testing API as a development tool
// would: Init, CommitFiles, and Serve with its own TLS certificate, fetched
// by a client that trusts only that certificate.
func TestServeOutsideTest(t *testing.T) {
	repo, err := gittest.Init(filepath.Join(t.TempDir(), "sandbox.git"))
	if err != nil {
		t.Fatal(err)
	}
	if repo.Name != "sandbox.git" || !filepath.IsAbs(repo.Dir) {
		t.Errorf("Init: Name %q, Dir %q; want sandbox.git and an absolute directory", repo.Name, repo.Dir)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where CommitFiles makes its work tree
	id, err := repo.CommitFiles(map[string]string{"apps/web/kustomization.yaml": "resources: []\n"}, "first")
	if err != nil {
		t.Fatal(err)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("CommitFiles left %v in its temporary directory (%v)", left, err)
	}
	cert, leaf := selfSigned(t, net.IPv4(127, 0, 0, 1))
	s, stop, err := repo.Serve(gittest.HTTPOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if !s.Certificate().Equal(leaf) {
		t.Error("Certificate is not the configured one")
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	res, err := client.Get(s.URL + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET info/refs: %s", res.Status)
	}
	if !strings.Contains(string(body), id+" refs/heads/main") {
		t.Errorf("info/refs does not advertise main at %s:\n%s", id, body)
	}
}

// selfSigned makes a self-signed ECDSA server certificate for ip.
func selfSigned(t *testing.T, ip net.IP) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: ip.String()},
		IPAddresses:  []net.IP{ip},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}

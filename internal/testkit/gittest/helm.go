package gittest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Chart is one chart version a HelmRepo serves.
type Chart struct {
	Name    string
	Version string
	// Files are the chart's files relative to its root ("Chart.yaml",
	// "templates/x.yaml", ...). A Chart.yaml is written when absent.
	Files map[string]string
}

// HelmOptions configures a Helm chart repository.
type HelmOptions struct {
	Charts []Chart
	// Username and Password, when set, are required as Basic auth on every
	// request (a private repository); otherwise it is anonymous.
	Username, Password string
}

// HelmRepo serves index.yaml and chart archives over HTTPS on 127.0.0.1.
type HelmRepo struct {
	// URL is the repository's base URL (index.yaml is URL + "/index.yaml").
	URL string
	// Digests maps "name-version" to the archive's SHA-256, as in index.yaml.
	Digests map[string]string

	srv      *httptest.Server
	archives map[string][]byte
	count    counter
}

// NewHelmRepo builds the charts' archives and serves them until the test
// ends.
func NewHelmRepo(tb testing.TB, opts HelmOptions) *HelmRepo {
	tb.Helper()
	h := &HelmRepo{Digests: map[string]string{}, archives: map[string][]byte{}}
	// The listener comes first so the index can name absolute archive URLs
	// before the server starts reading what is built here.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gittest: listen: %v", err)
	}
	h.URL = "https://" + ln.Addr().String()
	var index []byte
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.Username != "" || opts.Password != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != opts.Username || p != opts.Password {
				h.count.add(func(c *Counts) { c.Refused++ })
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest-helm"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		switch name := strings.TrimPrefix(r.URL.Path, "/"); {
		case name == "index.yaml":
			h.count.add(func(c *Counts) { c.RefLists++ })
			w.Header().Set("Content-Type", "application/x-yaml")
			_, _ = w.Write(index)
		case h.archives[name] != nil:
			h.count.add(func(c *Counts) { c.Packs++ })
			w.Header().Set("Content-Type", "application/gzip")
			_, _ = w.Write(h.archives[name])
		default:
			http.NotFound(w, r)
		}
	}))
	h.srv.Listener = ln

	type entry struct {
		APIVersion string    `json:"apiVersion"`
		Name       string    `json:"name"`
		Version    string    `json:"version"`
		Digest     string    `json:"digest"`
		Created    time.Time `json:"created"`
		URLs       []string  `json:"urls"`
	}
	entries := map[string][]entry{}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range opts.Charts {
		archive := ChartArchive(tb, c)
		sum := sha256.Sum256(archive)
		file := fmt.Sprintf("%s-%s.tgz", c.Name, c.Version)
		h.archives[file] = archive
		h.Digests[c.Name+"-"+c.Version] = hex.EncodeToString(sum[:])
		entries[c.Name] = append(entries[c.Name], entry{
			APIVersion: "v2", Name: c.Name, Version: c.Version,
			Digest: hex.EncodeToString(sum[:]), Created: created,
			URLs: []string{h.URL + "/" + file},
		})
	}
	index, err = yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries, "generated": created})
	if err != nil {
		_ = ln.Close()
		tb.Fatalf("gittest: index.yaml: %v", err)
	}
	h.srv.StartTLS()
	tb.Cleanup(h.srv.Close)
	return h
}

// Client returns an HTTP client that trusts the server's certificate.
func (h *HelmRepo) Client() *http.Client { return h.srv.Client() }

// Certificate returns the server's TLS certificate.
func (h *HelmRepo) Certificate() *x509.Certificate { return h.srv.Certificate() }

// Counts returns the requests answered: RefLists counts index.yaml, Packs
// counts archives.
func (h *HelmRepo) Counts() Counts { return h.count.get() }

// ChartArchive builds c's .tgz as helm package does: every file under a
// top-level directory named after the chart.
func ChartArchive(tb testing.TB, c Chart) []byte {
	tb.Helper()
	files := map[string]string{}
	for k, v := range c.Files {
		files[k] = v
	}
	if _, ok := files["Chart.yaml"]; !ok {
		files["Chart.yaml"] = fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", c.Name, c.Version)
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		body := []byte(files[name])
		hdr := &tar.Header{
			Name: c.Name + "/" + name, Mode: 0o644, Size: int64(len(body)),
			ModTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Typeflag: tar.TypeReg,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatalf("gittest: chart archive: %v", err)
		}
		if _, err := tw.Write(body); err != nil {
			tb.Fatalf("gittest: chart archive: %v", err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatalf("gittest: chart archive: %v", err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatalf("gittest: chart archive: %v", err)
	}
	return buf.Bytes()
}

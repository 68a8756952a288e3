package helmrepo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/helmrepo"
	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func chart(name, version string) gittest.Chart {
	return gittest.Chart{Name: name, Version: version, Files: map[string]string{
		"templates/cm.yaml": "version: " + version + "\n",
	}}
}

// mustRepo serves web, api and a prerelease with the gittest Helm server.
func mustRepo(tb testing.TB, opts gittest.HelmOptions) *gittest.HelmRepo {
	tb.Helper()
	if opts.Charts == nil {
		opts.Charts = []gittest.Chart{
			chart("web", "1.2.0"), chart("web", "1.2.3"), chart("web", "1.10.0"),
			chart("web", "2.0.0"), chart("web", "3.0.0-rc.1"), chart("api", "0.1.0"),
		}
	}
	return gittest.NewHelmRepo(tb, opts)
}

func wantReason(t *testing.T, err error, code string, reason service.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s/%s", code, reason)
	}
	if got := service.ErrorCode(err); got != code {
		t.Errorf("code = %q, want %q (%v)", got, code, err)
	}
	if got := service.ErrorReason(err); got != reason {
		t.Errorf("reason = %q, want %q (%v)", got, reason, err)
	}
}

func TestChartVersions(t *testing.T) {
	repo := mustRepo(t, gittest.HelmOptions{})
	f := helmrepo.New(repo.Client(), helmrepo.Options{})
	for _, tc := range []struct{ name, chart, version, want string }{
		{"Exact", "web", "1.2.3", "1.2.3"},
		{"ExactPrerelease", "web", "3.0.0-rc.1", "3.0.0-rc.1"},
		{"Wildcard", "web", "1.2.*", "1.2.3"},
		{"Range", "web", ">=1.0 <2.0", "1.10.0"},
		{"LatestWhenEmpty", "web", "", "2.0.0"},
		{"OtherChart", "api", "", "0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := f.Chart(context.Background(), repo.URL, tc.chart, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				tc.chart + "/Chart.yaml":        fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", tc.chart, tc.want),
				tc.chart + "/templates/cm.yaml": "version: " + tc.want + "\n",
			}
			got := map[string]string{}
			for k, v := range files {
				got[k] = string(v)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

func TestChartErrors(t *testing.T) {
	repo := mustRepo(t, gittest.HelmOptions{})
	private := mustRepo(t, gittest.HelmOptions{Username: "robot", Password: "s3cret-pass"})
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	broken := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	guard, err := netguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name                string
		client              *http.Client
		url, chart, version string
		code, noSecret      string
		reason              service.Reason
	}{
		{name: "ErrChartMissing", url: repo.URL, chart: "nope", version: "1.0.0",
			code: service.ENOTFOUND, reason: service.ReasonRefNotFound},
		{name: "ErrVersionMissing", url: repo.URL, chart: "web", version: "9.9.9",
			code: service.ENOTFOUND, reason: service.ReasonRefNotFound},
		{name: "ErrConstraintUnmatched", url: repo.URL, chart: "web", version: "~5.0",
			code: service.ENOTFOUND, reason: service.ReasonRefNotFound},
		{name: "ErrNotAConstraint", url: repo.URL, chart: "web", version: "main",
			code: service.ENOTFOUND, reason: service.ReasonRefNotFound},
		{name: "ErrPrivateRepository", url: private.URL, chart: "web", version: "1.2.3",
			code: service.EVALIDATION, reason: service.ReasonRepoAuthFailed},
		{name: "ErrPrivateRepositoryCredentialsInURL", client: private.Client(),
			url: strings.Replace(private.URL, "https://", "https://robot:s3cret-pass@", 1), chart: "web", version: "1.2.3",
			code: service.EVALIDATION, reason: service.ReasonRepoAuthFailed, noSecret: "s3cret-pass"},
		{name: "ErrOCI", url: "oci://registry.example.com/charts", chart: "web", version: "1.2.3",
			code: service.EVALIDATION, reason: service.ReasonSourceTypeUnsupported},
		{name: "ErrConnectionRefused", client: closed.Client(), url: closedURL, chart: "web",
			code: service.EUPSTREAM, reason: service.ReasonRepoUnreachable},
		{name: "ErrServerError", client: broken.Client(), url: broken.URL, chart: "web",
			code: service.EUPSTREAM, reason: service.ReasonRepoUnreachable},
		{name: "ErrRefusedByGuard", client: guard.HTTPClient(10 * time.Second), url: repo.URL, chart: "web",
			code: service.EUPSTREAM, reason: service.ReasonRepoUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client
			if client == nil {
				client = repo.Client()
				if strings.HasPrefix(tc.url, private.URL) {
					client = private.Client()
				}
			}
			_, err := helmrepo.New(client, helmrepo.Options{}).Chart(context.Background(), tc.url, tc.chart, tc.version)
			wantReason(t, err, tc.code, tc.reason)
			if tc.noSecret != "" && err != nil {
				if strings.Contains(err.Error(), tc.noSecret) || strings.Contains(service.ErrorMessage(err), tc.noSecret) {
					t.Errorf("error shows the credentials: %v", err)
				}
			}
		})
	}
	if got := private.Counts(); got.Packs != 0 {
		t.Errorf("private repository served %d archives, want 0", got.Packs)
	}
}

func TestChartIndexCachedForTTL(t *testing.T) {
	repo := mustRepo(t, gittest.HelmOptions{})
	clock := newClock()
	f := helmrepo.New(repo.Client(), helmrepo.Options{Now: clock.Now})
	ctx := context.Background()
	get := func(version string) {
		t.Helper()
		if _, err := f.Chart(ctx, repo.URL, "web", version); err != nil {
			t.Fatal(err)
		}
	}

	get("1.2.3")
	clock.Add(9 * time.Second)
	get("2.0.0")
	get("")
	if got := repo.Counts().RefLists; got != 1 {
		t.Fatalf("index fetched %d times within 10 s, want 1", got)
	}
	clock.Add(time.Second)
	get("1.2.3")
	if got := repo.Counts().RefLists; got != 2 {
		t.Fatalf("index fetched %d times after 10 s, want 2", got)
	}
	// Two distinct versions were extracted; the repeats came from the cache.
	if got := repo.Counts().Packs; got != 2 {
		t.Errorf("archives fetched %d times, want 2", got)
	}
}

func TestChartDownloadedOnce(t *testing.T) {
	repo := mustRepo(t, gittest.HelmOptions{})
	f := helmrepo.New(repo.Client(), helmrepo.Options{Now: newClock().Now})
	ctx := context.Background()

	first, err := f.Chart(ctx, repo.URL, "web", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	delete(first, "web/Chart.yaml") // the caller's map is its own

	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			files, err := f.Chart(ctx, repo.URL+"/", "web", "1.2.*")
			if err == nil && files["web/Chart.yaml"] == nil {
				err = fmt.Errorf("web/Chart.yaml missing from %v", files)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := repo.Counts(); got.Packs != 1 || got.RefLists != 1 {
		t.Errorf("counts = %+v, want one index and one archive", got)
	}
}

func TestChartConcurrentFirstFetchCollapsed(t *testing.T) {
	repo := mustRepo(t, gittest.HelmOptions{})
	f := helmrepo.New(repo.Client(), helmrepo.Options{Now: newClock().Now})
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = f.Chart(context.Background(), repo.URL, "web", "2.0.0")
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := repo.Counts(); got.Packs != 1 || got.RefLists != 1 {
		t.Errorf("counts = %+v, want one index and one archive", got)
	}
}

// staticRepo serves a hand-written index.yaml and archives, for what the
// gittest repository cannot produce (wrong digests, unsafe archives,
// relative URLs).
func staticRepo(tb testing.TB, index func(base string) string, files map[string][]byte) *httptest.Server {
	tb.Helper()
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/")
		if p == "index.yaml" {
			_, _ = w.Write([]byte(index(srv.URL)))
			return
		}
		if b, ok := files[p]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestChartArchives(t *testing.T) {
	good := gittest.ChartArchive(t, chart("web", "1.0.0"))
	renamed := gittest.ChartArchive(t, chart("web-1.0.0-dir", "1.0.0"))
	unsafe := tarball(t, map[string]string{"web/Chart.yaml": "name: web\n", "web/../../etc/evil": "x"})

	for _, tc := range []struct {
		name    string
		url     string // the index's archive URL; {base} is the server's URL
		digest  string
		archive []byte
		reason  service.Reason // "" = success
	}{
		{name: "RelativeURL", url: "charts/web-1.0.0.tgz", digest: digest(good), archive: good},
		{name: "AbsoluteURL", url: "{base}/charts/web-1.0.0.tgz", digest: digest(good), archive: good},
		{name: "NoDigest", url: "charts/web-1.0.0.tgz", archive: good},
		{name: "TopDirectoryRenamed", url: "charts/web-1.0.0.tgz", digest: digest(renamed), archive: renamed},
		{name: "ErrDigestMismatch", url: "charts/web-1.0.0.tgz", digest: digest(renamed), archive: good,
			reason: service.ReasonRenderFailed},
		{name: "ErrParentPath", url: "charts/web-1.0.0.tgz", archive: unsafe, reason: service.ReasonRenderFailed},
		{name: "ErrNotGzip", url: "charts/web-1.0.0.tgz", archive: []byte("<html>"), reason: service.ReasonRenderFailed},
		{name: "ErrArchiveMissing", url: "charts/other.tgz", archive: good, reason: service.ReasonRepoUnreachable},
		{name: "ErrOCIArchive", url: "oci://registry.example.com/web:1.0.0", archive: good,
			reason: service.ReasonSourceTypeUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := staticRepo(t, func(base string) string {
				return fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    digest: %q\n    urls: [%q]\n",
					tc.digest, strings.ReplaceAll(tc.url, "{base}", base))
			}, map[string][]byte{"charts/web-1.0.0.tgz": tc.archive})
			files, err := helmrepo.New(srv.Client(), helmrepo.Options{}).Chart(context.Background(), srv.URL, "web", "1.0.0")
			if tc.reason != "" {
				if service.ErrorReason(err) != tc.reason {
					t.Fatalf("err = %v, want reason %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := files["web/templates/cm.yaml"]; !ok || len(files) != 2 {
				t.Errorf("files = %v, want web/Chart.yaml and web/templates/cm.yaml", keys(files))
			}
		})
	}
}

func TestChartArchiveTooLarge(t *testing.T) {
	big := gittest.ChartArchive(t, gittest.Chart{Name: "web", Version: "1.0.0", Files: map[string]string{
		"templates/big.yaml": strings.Repeat("a: b\n", 10_000),
	}})
	srv := staticRepo(t, func(string) string {
		return "entries:\n  web:\n  - version: 1.0.0\n    urls: [web.tgz]\n"
	}, map[string][]byte{"web.tgz": big})
	for _, tc := range []struct {
		name string
		opts helmrepo.Options
	}{
		{"ErrArchiveBytes", helmrepo.Options{MaxArchiveBytes: int64(len(big) - 1)}},
		{"ErrExtractedBytes", helmrepo.Options{MaxChartBytes: 40_000}},
		{"ErrFileCount", helmrepo.Options{MaxChartFiles: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmrepo.New(srv.Client(), tc.opts).Chart(context.Background(), srv.URL, "web", "1.0.0")
			wantReason(t, err, service.EVALIDATION, service.ReasonRenderFailed)
		})
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The Go runtime profiles show the process's memory and code: they are
// served on the private admin listener and never on the public one.
func TestPprofAdminOnly(t *testing.T) {
	paths := []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1",
		"/debug/pprof/cmdline", "/debug/pprof/symbol"}

	t.Run("PublicListenerRefuses", func(t *testing.T) {
		public := mustServe(t)
		for _, tok := range []string{"", token(t, "alice", "team-a", "admin")} {
			for _, path := range paths {
				status, body := get(t, public.URL+path, tok)
				if status != http.StatusNotFound {
					t.Errorf("public GET %s (token %v): %d, want 404\n%s", path, tok != "", status, body)
				}
			}
		}
	})

	t.Run("AdminListenerServes", func(t *testing.T) {
		admin := httptest.NewServer(NewAdminHandler(func(context.Context) error { return nil }, http.NotFoundHandler()))
		t.Cleanup(admin.Close)
		for _, path := range paths {
			if status, body := get(t, admin.URL+path, ""); status != http.StatusOK {
				t.Errorf("admin GET %s: %d, want 200\n%s", path, status, body)
			}
		}
		if _, body := get(t, admin.URL+"/debug/pprof/", ""); !strings.Contains(body, "heap") {
			t.Errorf("admin /debug/pprof/ does not list the heap profile:\n%s", body)
		}
		// The heap profile is a gzipped protobuf, what `go tool pprof` reads.
		if _, body := get(t, admin.URL+"/debug/pprof/heap", ""); !strings.HasPrefix(body, "\x1f\x8b") {
			t.Errorf("admin /debug/pprof/heap is not a gzipped profile: %q", body[:min(len(body), 64)])
		}
	})
}

// get sends GET url with an optional bearer token and returns the status
// and body.
func get(t *testing.T, url, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

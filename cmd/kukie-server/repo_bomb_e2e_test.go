package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// TestRepoTabPackBombEndToEnd (issue 19) drives the server against a real
// Git server holding a pack bomb: 64 MiB of zeros (a 64 KiB pack) over the
// 8 MiB file limit is refused with 422 repo_too_large, and a retry is
// answered without asking the Git server again; with
// KUKIE_REPO_MAX_FETCH_BYTES at 1 MiB, a 2 MiB file within the file limit
// is refused by the fetch bound.
func TestRepoTabPackBombEndToEnd(t *testing.T) {
	zeros := strings.Repeat("\x00", 64<<20)
	rnd := rand.New(rand.NewPCG(19, 1))
	noise := make([]byte, 2<<20)
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		env   map[string]string
	}{
		{"FileOverItsLimit", map[string]string{"bomb.bin": zeros, "app/ok.yaml": "kind: ConfigMap\n"}, nil},
		{"FetchOverKUKIE_REPO_MAX_FETCH_BYTES", map[string]string{"noise.bin": string(noise)},
			map[string]string{"KUKIE_REPO_MAX_FETCH_BYTES": "1048576"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gittest.NewRepo(t)
			repo.Commit(t, tc.files, "bomb")
			git := repo.ServeHTTP(t, gittest.HTTPOptions{})
			env := map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1"}
			for k, v := range tc.env {
				env[k] = v
			}
			s := startServer(t, pgtest.MustCreateDatabase(t), env)
			admin := e2eToken(t, "admin")
			if status, body := call(t, "PUT", s.public+"/v1/clusters/c1/gitops-repo", admin,
				fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL)); status != 200 {
				t.Fatalf("connect: %d %s", status, body)
			}
			tree := func() (int, string) {
				t.Helper()
				status, body := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/tree", admin, "")
				var p struct{ Code string }
				_ = json.Unmarshal([]byte(body), &p)
				return status, p.Code
			}
			if status, code := tree(); status != 422 || code != "repo_too_large" {
				t.Fatalf("tree: %d %s, want 422 repo_too_large", status, code)
			}
			packs := git.Counts().Packs
			if status, code := tree(); status != 422 || code != "repo_too_large" {
				t.Fatalf("retry: %d %s, want 422 repo_too_large", status, code)
			}
			if n := git.Counts().Packs - packs; n != 0 {
				t.Errorf("the retry fetched %d packs; the refusal is remembered for 10 minutes", n)
			}
		})
	}
}

package argocd

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kukie/gitops-server/service"
)

// TestInternApps: equal strings of apps decoded elsewhere end up as one
// copy, shared with what the table already holds, and nothing changes
// value.
func TestInternApps(t *testing.T) {
	table := NewStrings(time.Now, time.Minute)
	fresh := func(s string) string { return strings.Clone(s) }
	healthy := fresh("Healthy")
	app := func() service.Application {
		h := fresh(healthy)
		return service.Application{ID: fresh("web"), Name: fresh("web"), Namespace: fresh("argocd"), SyncStatus: fresh("Synced"),
			Sources:   []service.AppSource{{RepoURL: fresh("https://git.example/r.git"), Path: fresh("apps/web")}},
			Resources: []service.AppResource{{Kind: fresh("Deployment"), Namespace: fresh("web"), Name: fresh("web"), Health: &h}},
			History:   []service.AppHistoryEntry{{Revision: fresh("abc123")}}}
	}
	apps := []service.Application{app(), app()}
	table.InternApps(apps[:1])
	table.InternApps(apps[1:])
	same := func(what, a, b string) {
		t.Helper()
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: two copies of %q", what, a)
		}
	}
	same("namespace", apps[0].Namespace, apps[1].Namespace)
	same("sync status", apps[0].SyncStatus, apps[1].SyncStatus)
	same("repo URL", apps[0].Sources[0].RepoURL, apps[1].Sources[0].RepoURL)
	same("kind", apps[0].Resources[0].Kind, apps[1].Resources[0].Kind)
	same("revision", apps[0].History[0].Revision, apps[1].History[0].Revision)
	if *apps[1].Resources[0].Health != "Healthy" || apps[1].Sources[0].Path != "apps/web" || apps[1].Name != "web" {
		t.Errorf("values changed: %+v", apps[1])
	}
	if table.Len() == 0 {
		t.Error("the table holds nothing: the copies would not stay canonical after a GC")
	}
}

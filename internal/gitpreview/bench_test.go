package gitpreview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// benchWorld is a directory source of 50 manifest files (one Deployment
// each, 40 lines), the app, the object of the last file, and its fields.
func benchWorld(b *testing.B) (trees, service.Cluster, service.Application, service.ObjectInfo, []service.FieldPreview) {
	b.Helper()
	files := map[string][]byte{}
	for i := range 50 {
		doc := strings.Replace(deployment, "name: web\nspec:", fmt.Sprintf("name: web-%02d\nspec:", i), 1)
		files[fmt.Sprintf("apps/many/deploy-%02d.yaml", i)] = []byte(strings.Repeat("# padding\n", 15) + doc)
	}
	tr := trees{"c1": files}
	_, c, app, obj := fixture()
	app.Sources[0].Path = "apps/many"
	obj.Name = "web-49"
	fields := []service.FieldPreview{
		{Field: "/spec/replicas", Live: json.RawMessage(`2`), Planned: json.RawMessage(`3`)},
		{Field: "/spec/template/spec/containers/0/image", Live: json.RawMessage(`"nginx:1.26"`), Planned: json.RawMessage(`"nginx:1.28"`)},
	}
	return tr, c, app, obj, fields
}

// BenchmarkLocateWarm is the preview's cost on detection when the commit's
// index is cached (the tree itself comes from the fetcher's cache): what a
// repeated check of the same app adds. Target: ≤ 2 ms.
func BenchmarkLocateWarm(b *testing.B) {
	tr, c, app, obj, fields := benchWorld(b)
	l := &Locator{Fetcher: tr, Masker: mustMasker(b)}
	l.Locate(context.Background(), c, app, obj, fields) // builds the index
	b.ReportAllocs()
	for b.Loop() {
		if got := l.Locate(context.Background(), c, app, obj, fields); got[0].Git.State != service.GitSet {
			b.Fatalf("%+v", got[0].Git)
		}
	}
}

// BenchmarkLocateCold is the first preview of a commit: every manifest
// file of the source parsed into the index.
func BenchmarkLocateCold(b *testing.B) {
	tr, c, app, obj, fields := benchWorld(b)
	masker := mustMasker(b)
	b.ReportAllocs()
	for b.Loop() {
		l := &Locator{Fetcher: tr, Masker: masker}
		if got := l.Locate(context.Background(), c, app, obj, fields); got[0].Git.State != service.GitSet {
			b.Fatalf("%+v", got[0].Git)
		}
	}
}

package gitrepo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// inProcessRenderer renders in this process (the server uses a child).
type inProcessRenderer struct{}

func (inProcessRenderer) Render(_ context.Context, in service.RenderInput) (service.RenderOutput, error) {
	var src render.Source
	_ = json.Unmarshal(in.Spec, &src)
	res := render.Render(render.Request{Files: in.Files, Source: src, AppName: in.AppName, Namespace: in.Namespace})
	out := service.RenderOutput{Manifests: res.Manifests, SourceType: res.SourceType}
	if res.Error != nil {
		out.Code, out.Message = service.Reason(res.Error.Code), res.Error.Message
	}
	return out, nil
}

type oneApp struct{ app service.Application }

func (o oneApp) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{Apps: []service.Application{o.app}}, nil
}

// BenchmarkRepoTab measures the repo tab over a real Git server (TLS, token
// auth) on a 500-file repository holding a Helm chart with 50 templates:
// the first tree (ref listing + fetch), the first render (fetch cached,
// render + mask), and the warm paths (no Git round trip, no render).
func BenchmarkRepoTab(b *testing.B) {
	files := map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"chart/values.yaml": "replicas: 2\nimage: nginx\n"}
	for i := range 50 {
		files[fmt.Sprintf("chart/templates/cm-%02d.yaml", i)] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-%02d\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n", i)
	}
	for i := len(files); i < 500; i++ {
		files[fmt.Sprintf("other/dir-%02d/f-%03d.yaml", i%40, i)] = "kind: ConfigMap\n" + strings.Repeat("# filler\n", 20)
	}
	repo := gittest.NewRepo(b)
	repo.Commit(b, files, "fixture")
	srv := repo.ServeHTTP(b, gittest.HTTPOptions{Token: "tok"})
	m, err := mask.New()
	if err != nil {
		b.Fatal(err)
	}
	c := service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessFull, GitOpsRepo: srv.URL, ArgoCDNamespace: "argocd"}
	app := service.Application{ID: "app", Name: "app", Namespace: "argocd", Destination: service.AppDestination{Namespace: "prod"},
		Sources: []service.AppSource{{RepoURL: srv.URL, Path: "chart", Spec: json.RawMessage(`{"path":"chart"}`)}}}
	newView := func() *service.RepoView {
		cache, _ := service.NewSnapshotCache(oneApp{app}, 4, time.Now, nil)
		store := clusterStore{c: c}
		repos := &gitrepo.ClusterRepos{Fetcher: gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()}),
			Auth: func(context.Context, service.Cluster) (service.RepoAuth, error) {
				return service.RepoAuth{Token: "tok"}, nil
			}}
		return &service.RepoView{Clusters: store, ArgoCD: &service.ArgoCD{Clusters: store, Cache: cache}, Fetcher: repos,
			Masker: mask.ForService{M: m}, Renderer: inProcessRenderer{}, ManifestMasker: mask.ForService{M: m}}
	}
	p := service.Principal{TeamID: "t1"}
	ctx := context.Background()
	b.Run("TreeFirst", func(b *testing.B) {
		for b.Loop() {
			if _, err := newView().Tree(ctx, p, "c1", "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ManifestsFirst", func(b *testing.B) {
		for b.Loop() {
			out, err := newView().Manifests(ctx, p, "c1", "app")
			if err != nil || len(out.Sources) != 1 || out.Sources[0].Error != nil {
				b.Fatalf("%+v %v", out, err)
			}
		}
	})
	warm := newView()
	if _, err := warm.Manifests(ctx, p, "c1", "app"); err != nil {
		b.Fatal(err)
	}
	b.Run("TreeWarm", func(b *testing.B) {
		for b.Loop() {
			if _, err := warm.Tree(ctx, p, "c1", "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ManifestsWarm", func(b *testing.B) {
		before := srv.Counts()
		for b.Loop() {
			if _, err := warm.Manifests(ctx, p, "c1", "app"); err != nil {
				b.Fatal(err)
			}
		}
		if after := srv.Counts(); after.Packs != before.Packs {
			b.Errorf("the warm path fetched %d packs", after.Packs-before.Packs)
		}
	})
}

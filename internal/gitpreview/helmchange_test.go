package gitpreview

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// onePlan and oneCluster are stores holding one plan and one cluster.
type onePlan struct {
	service.PlanStore
	plan service.Plan
}

func (s onePlan) GetPlan(context.Context, service.Principal, string) (service.Plan, error) {
	return s.plan, nil
}

type oneCluster struct {
	service.ClusterStore
	c service.Cluster
}

func (s oneCluster) GetCluster(context.Context, string, string) (service.Cluster, error) {
	return s.c, nil
}

// TestHelmGitChangeRendersThePlannedValues follows a Helm app's change
// from the preview to Git: the fields located with the traced render, the
// plan's patch applied with the git CLI, and the chart rendered again at
// that tree gives the planned values; what Git cannot take is listed.
func TestHelmGitChangeRendersThePlannedValues(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("this test applies patches with the git CLI: install git (e.g. apt-get install git)")
	}
	const spec = `{"path":"charts/web","helm":{"valueFiles":["values-prod.yaml"],"parameters":[{"name":"image.pullPolicy","value":"Always"}]}}`
	c, app, obj := helmApp(spec)
	repoFiles := tracedRepo(t)
	l := &Locator{Fetcher: repoFiles, Masker: mustMasker(t), Tracer: &inProcess{}}
	fields := l.Locate(context.Background(), c, app, obj, []service.FieldPreview{
		{Field: "/spec/replicas", Planned: json.RawMessage(`5`)},
		{Field: "/spec/template/spec/containers/0/image", Planned: json.RawMessage(`"nginx:1.29"`)},
		{Field: "/spec/revisionHistoryLimit", Planned: json.RawMessage(`2`)},
		{Field: "/spec/template/spec/containers/0/imagePullPolicy", Planned: json.RawMessage(`"Never"`)},
		{Field: "/metadata/annotations/note", Planned: json.RawMessage(`"x"`)},
		// Unset in the render; the template reads priorityClassName only when set.
		{Field: "/spec/template/spec/priorityClassName", Planned: json.RawMessage(`"high"`)},
	})
	if g := fields[5].Git; g.State != service.GitUnset || g.Source.Via != ViaHelmValues || g.Source.Key != "priorityClassName" ||
		g.Source.Path != "charts/web/values.yaml" || g.Source.Line != 21 || string(g.Source.KeyPlanned) != `"high"` {
		t.Errorf("priorityClassName: %+v %+v", g, g.Source)
	}
	w := service.ArgoCDWarning{Resources: []service.OwnershipResource{{Kind: "Deployment", Name: "shop-web", Application: "shop",
		Level: service.LevelSelfHeal, Fields: fields}}}
	payload, _ := json.Marshal(map[string]any{"argocd": w})
	changes := &service.GitChanges{Plans: onePlan{plan: service.Plan{ClusterID: "c", Payload: payload}},
		Clusters: oneCluster{c: c}, Fetcher: repoFiles, Masker: mask.ForService{M: mustMasker(t)}}
	ch, err := changes.Change(context.Background(), service.Principal{TeamID: "t"}, "00000000-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ch.Unsupported)
	if string(b) != `[{"field":"/spec/template/spec/containers/0/imagePullPolicy","reason":"application_spec"},`+
		`{"field":"/metadata/annotations/note","reason":"value_transformed"}]` {
		t.Errorf("unsupported %s", b)
	}
	dir := t.TempDir()
	for name, data := range repoFiles["c1"] {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(ch.Files) != 3 {
		t.Fatalf("files %+v", ch.Files)
	}
	for _, f := range ch.Files {
		patch := filepath.Join(t.TempDir(), "change.patch")
		if err := os.WriteFile(patch, []byte(f.Diff), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "apply", "--verbose", patch)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, f.Diff)
		}
	}
	after := map[string][]byte{}
	for name := range repoFiles["c1"] {
		after[name], _ = os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	}
	var src render.Source
	_ = json.Unmarshal([]byte(spec), &src)
	res := render.Render(render.Request{Files: after, Source: src, AppName: "shop", Namespace: "shop"})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	for _, s := range []string{"replicas: 5\n", "image: nginx:1.29\n", "revisionHistoryLimit: 2\n", "priorityClassName: high\n"} {
		if !strings.Contains(string(res.Manifests), s) {
			t.Errorf("the render after the patch lacks %q:\n%s", s, res.Manifests)
		}
	}
	// The untouched lines and comments stay.
	if !strings.HasPrefix(string(after["charts/web/values-prod.yaml"]), "# Production.\nreplicaCount: 5\n") {
		t.Errorf("values-prod.yaml after the patch:\n%s", after["charts/web/values-prod.yaml"])
	}
}

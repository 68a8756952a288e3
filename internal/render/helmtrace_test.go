package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/service"
)

// traceOf traces the "traced" repo's chart and returns, by document kind
// and pointer, each traced field written as its parts with leaves by path.
func traceOf(t *testing.T, helm *Helm) (service.HelmTrace, map[string]string) {
	t.Helper()
	tr := TraceHelm(Request{Files: MustLoadRepo(t, "traced"), AppName: "shop", Namespace: "shop",
		Source: Source{Path: "charts/web", Helm: helm}})
	if tr.Code != "" {
		t.Fatalf("trace failed: %s %s", tr.Code, tr.Message)
	}
	kinds := kindsOf(t, tr.Manifests)
	got := map[string]string{}
	for _, f := range tr.Fields {
		var b strings.Builder
		for _, p := range f.Parts {
			if p.Leaf > 0 {
				l := tr.Leaves[p.Leaf-1]
				b.WriteString("{" + strings.Join(l.Path, ".") + "@" + l.Origin.Kind + ":" + l.Origin.File + l.Origin.Parameter + "}")
			} else {
				b.WriteString(p.Text)
			}
		}
		if !f.Verified {
			b.WriteString(" (transformed)")
		}
		got[kinds[f.Doc]+f.Pointer] = b.String()
	}
	return tr, got
}

func kindsOf(t *testing.T, manifests []byte) []string {
	var kinds []string
	for _, doc := range strings.Split(string(manifests), "---\n")[1:] {
		for _, line := range strings.Split(doc, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}

// The chart uses include, toYaml, default, range, if, eq and tpl: each
// field fed by a values leaf names that leaf and the file that sets it.
func TestTraceHelmNamesTheLeafBehindEachField(t *testing.T) {
	tr, got := traceOf(t, &Helm{ValueFiles: []string{"values-prod.yaml"},
		Parameters: []HelmParameter{{Name: "image.tag", Value: "1.28", ForceString: true}}})
	want := map[string]string{
		"Deployment/spec/replicas": "{replicaCount@file:charts/web/values-prod.yaml}",
		"Deployment/spec/template/spec/containers/0/image": "{image.repository@file:charts/web/values.yaml}:" +
			"{image.tag@parameter:image.tag}",
		"Deployment/spec/template/spec/containers/0/imagePullPolicy": "{image.pullPolicy@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/env/0/name":      "{env.0.name@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/env/0/value":     "{env.0.value@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/env/1/name":      "{env.1.name@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/env/1/value":     "{env.1.value@file:charts/web/values.yaml}",
		// semverCompare needs minVersion's real value: the traced render
		// that marks it fails, and the halves without it are traced.
		"ConfigMap/data/mode": "{env.0.value@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/resources/limits/cpu":    "{resources.limits.cpu@file:charts/web/values.yaml}",
		"Deployment/spec/template/spec/containers/0/resources/limits/memory": "{resources.limits.memory@file:charts/web/values.yaml}",
		"Deployment/metadata/annotations/note":                               "{annotation@file:charts/web/values.yaml} (transformed)",
		"Service/spec/type":                                                  "{service.type@file:charts/web/values.yaml}",
		"Service/spec/ports/0/port":                                          "{service.port@file:charts/web/values-prod.yaml}",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"Deployment/spec/revisionHistoryLimit", "Deployment/metadata/name", "Service/spec/ports/0/targetPort", "ConfigMap/data/version"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s traced to a leaf: %q (it is literal in the template)", k, got[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("traced fields = %v", got)
	}
	// The real render is the one Argo CD makes.
	for _, s := range []string{"replicas: 3\n", "image: nginx:1.28\n", "note: shop-web\n", "port: 8080\n"} {
		if !strings.Contains(string(tr.Manifests), s) {
			t.Errorf("manifests lack %q:\n%s", s, tr.Manifests)
		}
	}
	if len(tr.Templates) != 3 || tr.Templates[1] != "charts/web/templates/service.yaml" || tr.Templates[2] != "charts/web/templates/deployment.yaml" {
		t.Errorf("templates = %q", tr.Templates)
	}
	for _, l := range tr.Leaves {
		if strings.Join(l.Path, ".") == "replicaCount" && l.Origin.Line != 2 {
			t.Errorf("replicaCount's line = %d, want 2", l.Origin.Line)
		}
	}
}

// The traced render crosses the child boundary as the render does.
func TestTraceHelmInChild(t *testing.T) {
	req := Request{Files: MustLoadRepo(t, "traced"), AppName: "shop", Namespace: "shop",
		Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"values-prod.yaml"}}}, Trace: true}
	res := runInChild(t, req, Limits{Timeout: time.Minute, MaxOutputBytes: 1 << 20})
	if res.Error != nil || res.Trace == nil || res.Trace.Code != "" {
		t.Fatalf("child trace: %+v", res)
	}
	want := TraceHelm(req)
	got, _ := json.Marshal(res.Trace)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) || len(want.Fields) == 0 {
		t.Errorf("the child's trace differs from the in-process one:\n%s\n%s", got, wantJSON)
	}
}

// Small arithmetic on a number leaf does not land on another leaf's
// marker, and a literal in a template that looks like one is not a leaf.
func TestTraceHelmArithmeticIsNotAnotherLeaf(t *testing.T) {
	files := map[string][]byte{
		"c/Chart.yaml":  []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
		"c/values.yaml": []byte("a: 80\nb: 81\n"),
		"c/templates/s.yaml": []byte("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports:\n" +
			"    - port: {{ .Values.a }}\n      targetPort: {{ add .Values.a 1 }}\n      nodePort: 910001\n"),
	}
	tr := TraceHelm(Request{Files: files, AppName: "x", Namespace: "x", Source: Source{Path: "c"}})
	for _, f := range tr.Fields {
		if f.Pointer != "/spec/ports/0/port" {
			t.Errorf("%s traced to leaf %v", f.Pointer, tr.Leaves[f.Parts[0].Leaf-1].Path)
		}
	}
	if len(tr.Fields) != 1 {
		t.Errorf("fields %+v", tr.Fields)
	}
}

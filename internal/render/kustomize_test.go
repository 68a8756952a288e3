package render

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRenderKustomize(t *testing.T) {
	files := MustLoadRepo(t, "kust")
	tests := []struct {
		name string
		opts *Kustomize
	}{
		{name: "overlay", opts: nil},
		{name: "overlay_with_app_overrides", opts: &Kustomize{
			NamePrefix:        "app-",
			NameSuffix:        "-v2",
			Images:            []string{"nginx=registry.example.com/nginx:1.27"},
			CommonLabels:      map[string]string{"team": "payments"},
			CommonAnnotations: map[string]string{"owner": "payments@example.com"},
			Namespace:         "payments",
			Replicas:          []KustomizeReplica{{Name: "web", Count: intstr.FromString("5")}},
			Patches:           []json.RawMessage{json.RawMessage(`{"target":{"kind":"Service"},"patch":"- op: add\n  path: /spec/type\n  value: ClusterIP\n"}`)},
			Components:        []string{"../../components/debug"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRender(t, Request{Files: files, Source: Source{Path: "overlays/prod", Kustomize: tt.opts}, AppName: "web"})
			if res.SourceType != SourceTypeKustomize {
				t.Errorf("source type = %q", res.SourceType)
			}
			assertGolden(t, "kustomize_"+tt.name, res.Manifests)
		})
	}
}

func TestRenderKustomizeRefusals(t *testing.T) {
	files := MustLoadRepo(t, "kust")
	tests := []struct {
		name, path string
		opts       *Kustomize
		code       string
	}{
		{name: "RemoteBase", path: "overlays/remote", code: CodeRenderFailed},
		{name: "HelmCharts", path: "overlays/helmcharts", code: CodeSourceTypeUnsupported},
		{name: "KRMFunction", path: "overlays/krm", code: CodeSourceTypeUnsupported},
		{name: "FileOutsideTree", path: "overlays/escape", code: CodeRenderFailed},
		{name: "LabelExistsWithoutForce", path: "base", opts: &Kustomize{CommonLabels: map[string]string{"x": "1"}}, code: ""},
		{name: "MissingComponent", path: "overlays/prod", opts: &Kustomize{Components: []string{"../../components/nope"}}, code: CodeRenderFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Render(Request{Files: files, Source: Source{Path: tt.path, Kustomize: tt.opts}})
			if tt.code == "" {
				if res.Error != nil {
					t.Fatalf("unexpected error %v", res.Error)
				}
				return
			}
			assertErrorCode(t, res, tt.code, "")
			assertNotContains(t, res.Error.Message, "PATH=")
		})
	}
}

func TestKustomizeLabelConflict(t *testing.T) {
	files := map[string][]byte{
		"k/kustomization.yaml": []byte("commonLabels: {team: a}\nresources: [cm.yaml]\n"),
		"k/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
	}
	res := Render(Request{Files: files, Source: Source{Path: "k", Kustomize: &Kustomize{CommonLabels: map[string]string{"team": "b"}}}})
	assertErrorCode(t, res, CodeRenderFailed, "")
	res = mustRender(t, Request{Files: files, Source: Source{Path: "k", Kustomize: &Kustomize{CommonLabels: map[string]string{"team": "b"}, ForceCommonLabels: true}}})
	assertContains(t, string(res.Manifests), "team: b")
}

package render

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRenderHelm(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	full := &Helm{
		ValueFiles: []string{"values-prod.yaml"},
		Values:     "message: from-values\nextra: from-values\n",
		Parameters: []HelmParameter{
			{Name: "replicaCount", Value: "4"},
			{Name: "message", Value: "from-param"},
			{Name: "image.tag", Value: "123", ForceString: true},
			{Name: "cache.enabled", Value: "true"},
		},
	}
	req := Request{
		Files: files, AppName: "argocd_shop", Namespace: "shop",
		KubeVersion: "v1.37.2", APIVersions: []string{"monitoring.coreos.com/v1"},
		Source: Source{Path: "charts/web", Helm: full},
	}
	res := mustRender(t, req)
	if res.SourceType != SourceTypeHelm {
		t.Errorf("source type = %q", res.SourceType)
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes = %q", res.Notes)
	}
	assertGolden(t, "helm_full", res.Manifests)
}

// Argo CD's precedence: valueFiles < values/valuesObject < parameters, each
// over the chart's values.yaml.
func TestRenderHelmValuePrecedence(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	tests := []struct {
		name string
		helm *Helm
		want string
	}{
		{name: "ChartDefault", helm: &Helm{}, want: "from-chart"},
		{name: "ValueFile", helm: &Helm{ValueFiles: []string{"values-prod.yaml"}}, want: "from-file"},
		{name: "ValuesOverFile", helm: &Helm{ValueFiles: []string{"values-prod.yaml"}, Values: "message: from-values"}, want: "from-values"},
		{name: "ValuesObjectOverValues", helm: &Helm{Values: "message: from-values", ValuesObject: json.RawMessage(`{"message":"from-object"}`)}, want: "from-object"},
		{name: "ParameterOverValues", helm: &Helm{ValueFiles: []string{"values-prod.yaml"}, ValuesObject: json.RawMessage(`{"message":"from-object"}`), Parameters: []HelmParameter{{Name: "message", Value: "from-param"}}}, want: "from-param"},
		{name: "SetStringAfterSet", helm: &Helm{Parameters: []HelmParameter{{Name: "message", Value: "as-string", ForceString: true}, {Name: "message", Value: "as-set"}}}, want: "as-string"},
		{name: "RefValueFile", helm: &Helm{ValueFiles: []string{"values-prod.yaml", "$values/env/values-shared.yaml"}}, want: "from-ref"},
		{name: "AbsoluteValueFileFromRoot", helm: &Helm{ValueFiles: []string{"/env/values-shared.yaml"}}, want: "from-ref"},
		{name: "GlobValueFiles", helm: &Helm{ValueFiles: []string{"values-*.yaml"}}, want: "from-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Files: files, AppName: "shop", Namespace: "shop", Source: Source{Path: "charts/web", Helm: tt.helm},
				RefFiles: map[string]map[string][]byte{"values": MustLoadRepo(t, "helm")}}
			res := mustRender(t, req)
			assertContains(t, string(res.Manifests), "message: "+tt.want+"\n")
		})
	}
}

func TestRenderHelmOptions(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	t.Run("SkipCrds", func(t *testing.T) {
		res := mustRender(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web", Helm: &Helm{SkipCrds: true}}})
		assertNotContains(t, string(res.Manifests), "CustomResourceDefinition")
		with := mustRender(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web"}})
		assertContains(t, string(with.Manifests), "kind: CustomResourceDefinition")
	})
	t.Run("ReleaseNameAndTypedParameters", func(t *testing.T) {
		res := mustRender(t, Request{Files: files, AppName: "shop", Namespace: "prod", Source: Source{Path: "charts/web", Helm: &Helm{
			ReleaseName: "custom",
			Parameters:  []HelmParameter{{Name: "image.tag", Value: "42"}, {Name: "replicaCount", Value: "7", ForceString: true}},
		}}})
		out := string(res.Manifests)
		assertContains(t, out, "name: custom-web\n")
		assertContains(t, out, "namespace: prod\n")
		assertContains(t, out, "tag-kind: int64\n")
		assertContains(t, out, "replicas-kind: string\n")
	})
	t.Run("UnparsableKubeVersionFallsBack", func(t *testing.T) {
		res := mustRender(t, Request{Files: files, AppName: "shop", KubeVersion: "devel", Source: Source{Path: "charts/web"}})
		if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "devel") {
			t.Fatalf("notes = %q", res.Notes)
		}
		assertContains(t, string(res.Manifests), "kube-version: v1.20.0\n")
	})
	t.Run("DetectedWithoutExplicitType", func(t *testing.T) {
		res := mustRender(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web"}})
		if res.SourceType != SourceTypeHelm {
			t.Fatalf("source type = %q", res.SourceType)
		}
		assertNotContains(t, string(res.Manifests), "Thanks for installing")
		assertNotContains(t, string(res.Manifests), "ignored by .helmignore")
	})
}

func TestRenderHelmErrors(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	t.Run("DependenciesMissing", func(t *testing.T) {
		res := Render(Request{Files: files, AppName: "deps", Source: Source{Path: "charts/deps"}})
		assertErrorCode(t, res, CodeRenderFailed, ReasonHelmDependenciesMissing)
		assertContains(t, res.Error.Message, "redis, postgresql")
	})
	t.Run("RemoteValueFile", func(t *testing.T) {
		res := Render(Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"https://example.com/values.yaml"}}}})
		assertErrorCode(t, res, CodeRenderFailed, "")
		assertContains(t, res.Error.Message, "remote content is not loaded")
	})
	t.Run("ValueFileOutsideTree", func(t *testing.T) {
		res := Render(Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"../../../../etc/passwd"}}}})
		assertErrorCode(t, res, CodeRenderFailed, "")
	})
	t.Run("AbsoluteValueFileStaysInTree", func(t *testing.T) {
		res := Render(Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"/etc/passwd"}}}})
		assertErrorCode(t, res, CodeRenderFailed, "")
	})
	t.Run("MissingValueFileIgnored", func(t *testing.T) {
		mustRender(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"nope.yaml"}, IgnoreMissingValueFiles: true}}})
	})
}

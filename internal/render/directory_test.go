package render

import (
	"testing"
)

func TestRenderDirectory(t *testing.T) {
	files := MustLoadRepo(t, "plain")
	tests := []struct {
		name string
		dir  *Directory
	}{
		{name: "top_level_only", dir: nil},
		{name: "recurse", dir: &Directory{Recurse: true}},
		// "*" crosses "/" in Argo CD's globs: extra/* matches extra/skip/cm.yaml.
		{name: "include_crosses_slash", dir: &Directory{Recurse: true, Include: "extra/*"}},
		{name: "exclude_crosses_slash", dir: &Directory{Recurse: true, Exclude: "*skip*"}},
		{name: "include_alternatives", dir: &Directory{Recurse: true, Include: "{deploy.yaml,*.json}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRender(t, Request{Files: files, Source: Source{Path: "apps/web", Directory: tt.dir}, AppName: "web"})
			if res.SourceType != SourceTypeDirectory {
				t.Errorf("source type = %q", res.SourceType)
			}
			assertNotContains(t, string(res.Manifests), "never-rendered")
			assertGolden(t, "directory_"+tt.name, res.Manifests)
		})
	}
}

func TestRenderDirectoryErrors(t *testing.T) {
	t.Run("JsonnetUnsupported", func(t *testing.T) {
		files := map[string][]byte{"app/main.jsonnet": []byte(`{}`)}
		res := Render(Request{Files: files, Source: Source{Path: "app"}})
		assertErrorCode(t, res, CodeSourceTypeUnsupported, "")
	})
	t.Run("BrokenManifest", func(t *testing.T) {
		files := map[string][]byte{"app/bad.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")}
		assertErrorCode(t, Render(Request{Files: files, Source: Source{Path: "app"}}), CodeRenderFailed, "")
	})
	t.Run("JSONWithTwoObjects", func(t *testing.T) {
		files := map[string][]byte{"app/two.json": []byte(`{"apiVersion":"v1","kind":"A","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"B","metadata":{"name":"b"}}`)}
		assertErrorCode(t, Render(Request{Files: files, Source: Source{Path: "app"}}), CodeRenderFailed, "")
	})
	t.Run("PathMissing", func(t *testing.T) {
		assertErrorCode(t, Render(Request{Files: MustLoadRepo(t, "plain"), Source: Source{Path: "apps/nope"}}), CodeRenderFailed, "")
	})
	t.Run("PathOutsideTree", func(t *testing.T) {
		assertErrorCode(t, Render(Request{Files: MustLoadRepo(t, "plain"), Source: Source{Path: "../../etc"}}), CodeRenderFailed, "")
	})
	t.Run("PluginUnsupported", func(t *testing.T) {
		res := Render(Request{Files: MustLoadRepo(t, "plain"), Source: Source{Path: "apps/web", Plugin: []byte(`{"name":"cmp"}`)}})
		assertErrorCode(t, res, CodeSourceTypeUnsupported, "")
	})
}

// A symlink in Git is a blob holding its target's path; a caller that passes
// it through unresolved hands over that text, which is never followed.
func TestRenderDirectoryNeverFollowsLinkText(t *testing.T) {
	t.Setenv("KUKIE_TEST_PLANTED_SECRET", "planted-secret-value")
	files := map[string][]byte{
		"app/link.yaml": []byte("/proc/self/environ"),
		"app/cm.yaml":   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"),
	}
	res := mustRender(t, Request{Files: files, Source: Source{Path: "app"}})
	assertNotContains(t, string(res.Manifests), "planted-secret-value")
	assertContains(t, string(res.Manifests), "name: ok")
}

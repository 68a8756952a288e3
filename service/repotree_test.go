package service

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepoFolders(t *testing.T) {
	files := map[string][]byte{
		"apps/web/deploy.yaml":              nil,
		"apps/shop/base/kustomization.yaml": []byte("resources: [deploy.yaml, ../../../shared/config]\n"),
		"apps/shop/base/deploy.yaml":        nil,
		"apps/shop/overlays/prod/kustomization.yaml": []byte(
			"resources: [../../base, https://example.com/remote.yaml]\ncomponents: [../../components/metrics]\n" +
				"patches: [{path: patches/replicas.yaml}]\n"),
		"apps/shop/overlays/prod/patches/replicas.yaml":   nil,
		"apps/shop/components/metrics/kustomization.yaml": []byte("kind: Component\n"),
		"shared/config/cm.yaml":                           nil,
		"charts/api/Chart.yaml":                           nil,
		"charts/api/values.yaml":                          nil,
		"env/prod/api-values.yaml":                        nil,
		"unused/readme.md":                                nil,
	}
	const repo = "https://github.com/org/gitops"
	spec := func(s string) json.RawMessage { return json.RawMessage(s) }
	apps := []Application{
		{ID: "web", Name: "web", Sources: []AppSource{{RepoURL: "git@github.com:org/gitops.git", Path: "apps/web"}}},
		{ID: "shop", Name: "shop", Sources: []AppSource{{RepoURL: repo, Path: "apps/shop/overlays/prod"}}},
		{ID: "api", Name: "api", Sources: []AppSource{
			{RepoURL: "https://charts.example.com", Chart: "api", Spec: spec(`{"chart":"api","helm":{"valueFiles":["$values/env/prod/api-values.yaml"]}}`)},
			{RepoURL: repo, Ref: "values"}}},
		{ID: "other", Name: "other", Sources: []AppSource{{RepoURL: "https://github.com/org/elsewhere", Path: "apps/web"}}},
		{ID: "local-chart", Name: "local-chart", Sources: []AppSource{{RepoURL: repo, Path: "charts/api",
			Spec: spec(`{"path":"charts/api","helm":{"valueFiles":["values.yaml","../../env/prod/api-values.yaml"]}}`)}}},
	}
	folders, truncated := RepoFolders(files, "", apps, repo)
	got := map[string][]FolderApp{}
	for _, f := range folders {
		got[f.Path] = f.Apps
	}
	want := map[string][]FolderApp{
		".":                               {},
		"apps":                            {},
		"apps/web":                        {{AppID: "web", Name: "web", Via: ViaSourcePath}},
		"apps/shop":                       {},
		"apps/shop/base":                  {{AppID: "shop", Name: "shop", Via: ViaKustomizeResource}},
		"apps/shop/overlays":              {},
		"apps/shop/overlays/prod":         {{AppID: "shop", Name: "shop", Via: ViaSourcePath}},
		"apps/shop/overlays/prod/patches": {{AppID: "shop", Name: "shop", Via: ViaKustomizeResource}},
		"apps/shop/components":            {},
		"apps/shop/components/metrics":    {{AppID: "shop", Name: "shop", Via: ViaKustomizeResource}},
		"shared":                          {},
		"shared/config":                   {{AppID: "shop", Name: "shop", Via: ViaKustomizeResource}},
		"charts":                          {},
		"charts/api":                      {{AppID: "local-chart", Name: "local-chart", Via: ViaSourcePath}, {AppID: "local-chart", Name: "local-chart", Via: ViaHelmValueFile}},
		"env":                             {},
		"env/prod":                        {{AppID: "api", Name: "api", Via: ViaHelmValueFile}, {AppID: "local-chart", Name: "local-chart", Via: ViaHelmValueFile}},
		"unused":                          {},
	}
	if diff := cmp.Diff(want, got); diff != "" || truncated {
		t.Errorf("folders (-want +got), truncated %v:\n%s", truncated, diff)
	}

	// Under a prefix only that subtree is listed.
	sub, _ := RepoFolders(files, "apps/shop/", apps, repo)
	if len(sub) != 7 || sub[0].Path != "apps/shop" {
		t.Errorf("under apps/shop: %+v", sub)
	}
}

func TestRepoFoldersTruncated(t *testing.T) {
	files := map[string][]byte{}
	for i := range MaxRepoFolders + 5 {
		files[fmt.Sprintf("d%05d/f.yaml", i)] = nil
	}
	folders, truncated := RepoFolders(files, "", nil, "")
	if !truncated || len(folders) != MaxRepoFolders {
		t.Errorf("%d folders, truncated %v", len(folders), truncated)
	}
}

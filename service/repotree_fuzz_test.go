package service

import (
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// maxFuzzInput caps what a fuzz target of this package reads in all.
const maxFuzzInput = 64 << 10

const fuzzRepo = "https://github.com/org/gitops"

// Where the fuzzed kustomizations and the apps of FuzzRepoFolders live.
const (
	fuzzOverlayDir = "apps/shop/overlays/prod"
	fuzzBaseDir    = "apps/shop/base"
	fuzzChartDir   = "charts/api"
)

// fuzzRepoFiles is a small GitOps repository whose two kustomizations
// (an overlay and its base) hold the fuzzed bodies.
func fuzzRepoFiles(overlay, base string) map[string][]byte {
	return map[string][]byte{
		"apps/web/deploy.yaml":                            nil,
		fuzzBaseDir + "/kustomization.yaml":               []byte(base),
		fuzzBaseDir + "/deploy.yaml":                      nil,
		fuzzOverlayDir + "/kustomization.yaml":            []byte(overlay),
		fuzzOverlayDir + "/patches/replicas.yaml":         nil,
		"apps/shop/components/metrics/kustomization.yaml": []byte("kind: Component\n"),
		"shared/config/cm.yaml":                           nil,
		fuzzChartDir + "/Chart.yaml":                      nil,
		fuzzChartDir + "/values.yaml":                     nil,
		fuzzChartDir + "/env/prod/values.yaml":            nil,
		"env/prod/api-values.yaml":                        nil,
	}
}

// fuzzRepoApps: a kustomize app on the overlay, a local chart with one
// value file, and a repository chart whose value file comes from this
// repository through the ref source "values".
func fuzzRepoApps(tb testing.TB, valueFile, refValueFile string) []Application {
	tb.Helper()
	spec := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	helm := func(vf string) map[string]any { return map[string]any{"valueFiles": []string{vf}} }
	return []Application{
		{ID: "shop", Name: "shop", Sources: []AppSource{{RepoURL: fuzzRepo, Path: fuzzOverlayDir}}},
		{ID: "local-chart", Name: "local-chart", Sources: []AppSource{{RepoURL: fuzzRepo, Path: fuzzChartDir,
			Spec: spec(map[string]any{"path": fuzzChartDir, "helm": helm(valueFile)})}}},
		{ID: "api", Name: "api", Sources: []AppSource{
			{RepoURL: "https://charts.example.com", Chart: "api", Spec: spec(map[string]any{"chart": "api", "helm": helm(refValueFile)})},
			{RepoURL: fuzzRepo + ".git", Ref: "values"}}},
	}
}

// repoResolve is the reference resolution of a path written in a source or
// a kustomization: from the repository root when it starts with "/", else
// from dir, element by element; ok is false as soon as a ".." has nothing
// left to remove (Argo CD's "resolved to outside repository root"). The
// root is ".".
func repoResolve(dir, p string) (string, bool) {
	var elems []string
	if dir != "." && dir != "" && !strings.HasPrefix(p, "/") {
		elems = strings.Split(dir, "/")
	}
	for _, e := range strings.Split(p, "/") {
		switch e {
		case "", ".":
		case "..":
			if len(elems) == 0 {
				return "", false
			}
			elems = elems[:len(elems)-1]
		default:
			elems = append(elems, e)
		}
	}
	if len(elems) == 0 {
		return ".", true
	}
	return strings.Join(elems, "/"), true
}

// inRepo reports a folder path RepoFolders may list: "." or clean,
// relative and without "." or ".." elements.
func inRepo(p string) bool {
	if p == "." {
		return true
	}
	if p == "" || path.Clean(p) != p || path.IsAbs(p) {
		return false
	}
	return !slices.Contains(strings.Split(p, "/"), "..")
}

// fuzzKustomization is what a kustomization refers to, as RepoFolders reads
// it.
type fuzzKustomization struct {
	Resources             []string `json:"resources"`
	Bases                 []string `json:"bases"`
	Components            []string `json:"components"`
	PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
	Patches               []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// kustomizeEntries lists the local entries of the kustomization in dir
// (none when it is missing or does not parse).
func kustomizeEntries(files map[string][]byte, dir string) []string {
	var body []byte
	for _, name := range KustomizationNames() {
		if b, ok := files[path.Join(dir, name)]; ok {
			body = b
			break
		}
	}
	var k fuzzKustomization
	if body == nil || yaml.Unmarshal(body, &k) != nil {
		return nil
	}
	entries := slices.Concat(k.Resources, k.Bases, k.Components, k.PatchesStrategicMerge)
	for _, p := range k.Patches {
		entries = append(entries, p.Path)
	}
	return slices.DeleteFunc(entries, func(e string) bool {
		return e == "" || strings.Contains(e, "://") || strings.HasPrefix(e, "git@")
	})
}

// entryFolder is the folder a kustomization entry pulls in: the entry's
// folder for a file, else the entry.
func entryFolder(files map[string][]byte, target string) string {
	if _, isFile := files[target]; isFile {
		return path.Dir(target)
	}
	return target
}

// valueFileFolder is the folder Argo CD reads a value file of a source at
// appPath from (here: the source is in this repository): "$<ref>/..." from
// the root of a ref source in this repository, a remote URL from nowhere,
// anything else relative to appPath or, starting with "/", to the root.
// ok is false when the file is not in this repository.
func valueFileFolder(appPath, vf string, refs map[string]bool, here bool) (string, bool) {
	if ref, rest, found := strings.Cut(vf, "/"); found && strings.HasPrefix(ref, "$") {
		if !refs[ref[1:]] {
			return "", false
		}
		p, ok := repoResolve(".", "/"+rest)
		return path.Dir(p), ok && p != "."
	}
	if u, err := url.Parse(vf); !here || err == nil && u.Scheme != "" {
		return "", false
	}
	p, ok := repoResolve(appPath, vf)
	return path.Dir(p), ok && p != "."
}

// FuzzRepoFolders checks how the repo view links folders to apps through
// kustomize entries and Helm value files, with fuzzed kustomizations and
// value files: it lists exactly the tree's folders; every link names an app
// and stays on a folder the app's files resolve to inside the repository;
// each kustomize entry and value file resolving to a file or folder of the
// tree links its folder (value files as Argo CD resolves them, "/" from the
// root, "$values/" from the ref source's root); nothing outside the tree
// (a "..", an absolute path) is ever reached; nothing panics.
func FuzzRepoFolders(f *testing.F) {
	f.Add("resources: [../../base, https://example.com/remote.yaml]\ncomponents: [../../components/metrics]\npatches: [{path: patches/replicas.yaml}]\n",
		"resources: [deploy.yaml, ../../../shared/config]\n", "values.yaml", "$values/env/prod/api-values.yaml")
	f.Add("bases: [../../base]\npatchesStrategicMerge: [patches/replicas.yaml]\n", "resources: [../overlays/prod, ../../../../etc]\n",
		"../../env/prod/api-values.yaml", "$values/../env/prod/api-values.yaml")
	f.Add("resources: [/shared/config, ../../../../../apps/web]\n", "resources: [.., ../../.., .]\n",
		"/env/prod/api-values.yaml", "$values//env/prod/api-values.yaml")
	f.Add("resources: [\"\", git@github.com:o/r.git, ./]\n", "{", "https://example.com/values.yaml", "$values/")
	f.Add("resources: {a: b}\n", "resources:\n- ../base/deploy.yaml\n", "env/prod/values.yaml", "$other/env/prod/api-values.yaml")
	f.Fuzz(func(t *testing.T, overlay, base, valueFile, refValueFile string) {
		if len(overlay)+len(base)+len(valueFile)+len(refValueFile) > maxFuzzInput {
			return
		}
		files := fuzzRepoFiles(overlay, base)
		apps := fuzzRepoApps(t, valueFile, refValueFile)
		folders, truncated := RepoFolders(files, "", apps, fuzzRepo)

		want := []string{"."}
		for name := range files {
			for d := path.Dir(name); d != "."; d = path.Dir(d) {
				want = append(want, d)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		got := make([]string, len(folders))
		links := map[[2]string][]string{} // app, via -> folders
		for i, fo := range folders {
			got[i] = fo.Path
			if !inRepo(fo.Path) {
				t.Fatalf("folder %q is not a path inside the repository", fo.Path)
			}
			seen := map[[2]string]bool{}
			for _, l := range fo.Apps {
				k := [2]string{l.AppID, l.Via}
				if seen[k] || !slices.ContainsFunc(apps, func(a Application) bool { return a.ID == l.AppID && a.Name == l.Name }) ||
					!slices.Contains([]string{ViaSourcePath, ViaKustomizeResource, ViaHelmValueFile}, l.Via) {
					t.Fatalf("folder %q: link %+v repeated or unknown", fo.Path, l)
				}
				seen[k] = true
				links[k] = append(links[k], fo.Path)
			}
		}
		if truncated || !slices.Equal(got, want) {
			t.Fatalf("folders %q (truncated %v), want the tree's %q", got, truncated, want)
		}
		isFolder := func(p string) bool { _, ok := slices.BinarySearch(want, p); return ok }

		for _, app := range []string{"shop", "local-chart"} {
			wantPath := map[string]string{"shop": fuzzOverlayDir, "local-chart": fuzzChartDir}[app]
			if l := links[[2]string{app, ViaSourcePath}]; !slices.Equal(l, []string{wantPath}) {
				t.Fatalf("%s source path linked to %q, want %s", app, l, wantPath)
			}
		}
		if l := links[[2]string{"api", ViaSourcePath}]; l != nil {
			t.Fatalf("api (a chart and a ref) linked as a source path to %q", l)
		}

		// Kustomize: every folder reached stays inside the repository; the
		// overlay's own entries are all linked; nothing else than what the
		// overlay reaches, following kustomizations, is.
		for _, d := range kustomizeDirs(files, fuzzOverlayDir, 0, map[string]bool{}) {
			if !inRepo(d) {
				t.Fatalf("kustomizeDirs reached %q, outside the repository", d)
			}
		}
		reachable := map[string]bool{fuzzOverlayDir: true}
		for queue := []string{fuzzOverlayDir}; len(queue) > 0; queue = queue[1:] {
			for _, e := range kustomizeEntries(files, queue[0]) {
				target, ok := repoResolve(queue[0], e)
				if !ok {
					continue
				}
				dir := entryFolder(files, target)
				if queue[0] == fuzzOverlayDir && dir != fuzzOverlayDir && isFolder(dir) &&
					!slices.Contains(links[[2]string{"shop", ViaKustomizeResource}], dir) {
					t.Fatalf("overlay entry %q (folder %s) not linked: %q", e, dir, links[[2]string{"shop", ViaKustomizeResource}])
				}
				if !reachable[dir] {
					reachable[dir] = true
					queue = append(queue, dir)
				}
			}
		}
		for _, d := range links[[2]string{"shop", ViaKustomizeResource}] {
			if !reachable[d] {
				t.Fatalf("folder %s linked to shop's kustomization, which does not reach it", d)
			}
		}
		for _, app := range []string{"local-chart", "api"} {
			if l := links[[2]string{app, ViaKustomizeResource}]; l != nil {
				t.Fatalf("%s has no kustomization but is linked through one to %q", app, l)
			}
		}

		// Helm value files.
		refs := map[string]bool{"values": true}
		for _, tt := range []struct {
			app, vf string
			here    bool
		}{{"local-chart", valueFile, true}, {"api", refValueFile, false}} {
			dir, ok := valueFileFolder(fuzzChartDir, tt.vf, refs, tt.here)
			l := links[[2]string{tt.app, ViaHelmValueFile}]
			switch {
			case ok && isFolder(dir) && !slices.Equal(l, []string{dir}):
				t.Fatalf("%s value file %q: linked %q, want %s", tt.app, tt.vf, l, dir)
			case (!ok || !isFolder(dir)) && l != nil:
				t.Fatalf("%s value file %q is not in the repository, yet linked %q", tt.app, tt.vf, l)
			}
		}
	})
}

// TestRepoFoldersResolvesLikeTheRenderer: value files and kustomize entries
// starting with "/" are read from the repository root, as the renderer (and
// Argo CD, for value files) reads them, not from the source's folder; a
// "$values/" naming the root itself links nothing.
func TestRepoFoldersResolvesLikeTheRenderer(t *testing.T) {
	files := fuzzRepoFiles("resources: [/shared/config]\n", "")
	folders, _ := RepoFolders(files, "", fuzzRepoApps(t, "/env/prod/api-values.yaml", "$values/"), fuzzRepo)
	got := map[string][]FolderApp{}
	for _, f := range folders {
		if len(f.Apps) > 0 {
			got[f.Path] = f.Apps
		}
	}
	want := map[string][]FolderApp{
		fuzzOverlayDir:  {{AppID: "shop", Name: "shop", Via: ViaSourcePath}},
		"shared/config": {{AppID: "shop", Name: "shop", Via: ViaKustomizeResource}},
		fuzzChartDir:    {{AppID: "local-chart", Name: "local-chart", Via: ViaSourcePath}},
		"env/prod":      {{AppID: "local-chart", Name: "local-chart", Via: ViaHelmValueFile}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("linked folders (-want +got):\n%s", diff)
	}
}

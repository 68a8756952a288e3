package service

import (
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxRepoFolders is how many folders a repo tree lists.
const MaxRepoFolders = 10000

// How an app uses a folder of the connected repository.
const (
	ViaSourcePath        = "source_path"        // the folder is a source's path
	ViaKustomizeResource = "kustomize_resource" // pulled in by the app's kustomization (resources, components, patches)
	ViaHelmValueFile     = "helm_value_file"    // holds one of the app's Helm value files
)

// FolderApp is an app that uses a folder, and how.
type FolderApp struct {
	AppID string `json:"app_id"`
	Name  string `json:"name"`
	Via   string `json:"via"`
}

// RepoFolder is one folder of the repository with the apps that use it
// (none: an empty list).
type RepoFolder struct {
	Path string      `json:"path"`
	Apps []FolderApp `json:"apps"`
}

// KustomizationNames are the file names kustomize reads in a folder, in
// its lookup order: Argo CD's KustomizationNames (util/kustomize/kustomize.go).
// The one home of the list: the repo tab's folders and the render use it.
func KustomizationNames() []string {
	return []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}
}

// maxKustomizeDepth bounds how deep kustomizations referencing others are
// followed (cycles end there too).
const maxKustomizeDepth = 8

// RepoFolders lists the folders of a repository tree (file paths, "/"
// separated, relative to the root), under prefix when not "", and links
// each to the apps that use it: a source's path in this repository, the
// folders and files its kustomization pulls in, and the folders of its Helm
// value files (including "$ref/..." files of multi-source apps whose ref
// source is this repository). Only sources whose repository is repoURL
// count. At most MaxRepoFolders folders (truncated then).
func RepoFolders(files map[string][]byte, prefix string, apps []Application, repoURL string) (folders []RepoFolder, truncated bool) {
	prefix = strings.Trim(prefix, "/")
	dirs := repoDirs(files, prefix)
	links := folderLinks{}
	want := NormalizeRepoURL(repoURL)
	for _, a := range apps {
		links.linkApp(files, a, want)
	}
	return listFolders(dirs, prefix, links)
}

// repoDirs are the folders holding the files, and the root when the
// listing starts there (prefix "").
func repoDirs(files map[string][]byte, prefix string) map[string]bool {
	dirs := map[string]bool{}
	for f := range files {
		for d := path.Dir(f); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	if prefix == "" {
		dirs["."] = true
	}
	return dirs
}

// folderLinks are the apps that use each folder, by its clean path.
type folderLinks map[string][]FolderApp

// link records that app a uses dir via a way, once.
func (links folderLinks) link(dir string, a Application, via string) {
	dir = path.Clean(dir)
	if dir == "" {
		dir = "."
	}
	for _, l := range links[dir] {
		if l.AppID == a.ID && l.Via == via {
			return
		}
	}
	links[dir] = append(links[dir], FolderApp{AppID: a.ID, Name: a.Name, Via: via})
}

// linkApp links the folders app a uses in the repository want (a
// normalized URL): its sources' paths, what their kustomizations pull in,
// and its Helm value files.
func (links folderLinks) linkApp(files map[string][]byte, a Application, want string) {
	refs := map[string]bool{} // ref names whose source is this repository
	for _, src := range a.Sources {
		if src.Ref != "" && NormalizeRepoURL(src.RepoURL) == want {
			refs[src.Ref] = true
		}
	}
	for _, src := range a.Sources {
		here := NormalizeRepoURL(src.RepoURL) == want
		if here && src.Chart == "" && src.Ref == "" || here && src.Path != "" {
			dir := path.Clean(strings.Trim(src.Path, "/"))
			links.link(dir, a, ViaSourcePath)
			for _, d := range kustomizeDirs(files, dir, 0, map[string]bool{}) {
				if d != dir {
					links.link(d, a, ViaKustomizeResource)
				}
			}
		}
		links.linkValueFiles(a, src, here, refs)
	}
}

// linkValueFiles links the folders of src's Helm value files: "$ref/..."
// files whose ref is in refs, and the source's own files when the source
// is this repository's (here).
func (links folderLinks) linkValueFiles(a Application, src AppSource, here bool, refs map[string]bool) {
	for _, vf := range helmValueFiles(src.Spec) {
		if ref, rest, ok := strings.Cut(vf, "/"); ok && strings.HasPrefix(ref, "$") {
			// "$<ref>/<file>" is read from the ref source's root.
			if p, inside := resolveRepoPath(".", "/"+rest); refs[strings.TrimPrefix(ref, "$")] && inside && p != "." {
				links.link(path.Dir(p), a, ViaHelmValueFile)
			}
			continue
		}
		if u, err := url.Parse(vf); err == nil && u.Scheme != "" {
			// A URL ("https://…", but also "a:") is a remote file or
			// an error for Argo CD, never a file of this repository
			// (upstream util/io/path/resolved.go,
			// ResolveValueFilePathOrUrl).
			continue
		}
		if p, inside := resolveRepoPath(strings.Trim(src.Path, "/"), vf); here && inside && p != "." {
			links.link(path.Dir(p), a, ViaHelmValueFile)
		}
	}
}

// listFolders lists the folders of dirs under prefix, sorted, at most
// MaxRepoFolders (truncated then), each with the apps linked to it.
func listFolders(dirs map[string]bool, prefix string, links folderLinks) (folders []RepoFolder, truncated bool) {
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		if prefix == "" || d == prefix || strings.HasPrefix(d, prefix+"/") {
			names = append(names, d)
		}
	}
	slices.Sort(names)
	if len(names) > MaxRepoFolders {
		names, truncated = names[:MaxRepoFolders], true
	}
	folders = make([]RepoFolder, 0, len(names))
	for _, d := range names {
		apps := links[d]
		if apps == nil {
			apps = []FolderApp{}
		}
		folders = append(folders, RepoFolder{Path: d, Apps: apps})
	}
	return folders, truncated
}

// kustomizeDirs returns the folders a kustomization in dir pulls in —
// itself, its resources and components (folders, or the folder of a file),
// its patch files — following referenced kustomizations. Remote resources
// (URLs) are not folders of this repository and are left out.
func kustomizeDirs(files map[string][]byte, dir string, depth int, seen map[string]bool) []string {
	if depth > maxKustomizeDepth || seen[dir] {
		return nil
	}
	seen[dir] = true
	var body []byte
	for _, name := range KustomizationNames() {
		if b, ok := files[path.Join(dir, name)]; ok {
			body = b
			break
		}
	}
	if body == nil {
		return nil
	}
	var k struct {
		Resources             []string `json:"resources"`
		Bases                 []string `json:"bases"`
		Components            []string `json:"components"`
		PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
		Patches               []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if yaml.Unmarshal(body, &k) != nil {
		return []string{dir}
	}
	out := []string{dir}
	refs := slices.Concat(k.Resources, k.Bases, k.Components, k.PatchesStrategicMerge)
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	for _, r := range refs {
		if r == "" || strings.Contains(r, "://") || strings.HasPrefix(r, "git@") {
			continue
		}
		target, inside := resolveRepoPath(dir, r)
		if !inside {
			continue
		}
		if _, isFile := files[target]; isFile {
			out = append(out, path.Dir(target))
			continue
		}
		out = append(out, target)
		out = append(out, kustomizeDirs(files, target, depth+1, seen)...)
	}
	return out
}

// resolveRepoPath resolves a value file or kustomize entry p written in
// dir as the renderer does (render's join) and Argo CD does for value
// files: from the repository root when it starts with "/", else from dir.
// inside is false when it leaves the repository.
func resolveRepoPath(dir, p string) (resolved string, inside bool) {
	if strings.HasPrefix(p, "/") {
		resolved = path.Clean(strings.TrimLeft(p, "/"))
	} else {
		resolved = path.Join(dir, p)
	}
	return resolved, resolved != ".." && !strings.HasPrefix(resolved, "../")
}

// helmValueFiles reads helm.valueFiles of a source's spec.
func helmValueFiles(spec json.RawMessage) []string {
	if len(spec) == 0 {
		return nil
	}
	var s struct {
		Helm struct {
			ValueFiles []string `json:"valueFiles"`
		} `json:"helm"`
	}
	if json.Unmarshal(spec, &s) != nil {
		return nil
	}
	return s.Helm.ValueFiles
}

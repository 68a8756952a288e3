package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
)

// MaxRepoFileBytes is the largest file the repo tab shows.
const MaxRepoFileBytes = 1 << 20

// ErrRepoNotConnected is the answer for a cluster without a connected
// repository, or an app whose Git source is another repository.
func ErrRepoNotConnected() error {
	return ReasonError(ECONFLICT, ReasonRepoNotConnected,
		"No GitOps repository is connected to this cluster (or the app's source is another repository): "+
			"connect it with PUT /v1/clusters/{cluster_id}/gitops-repo.")
}

// RepoFetcher reads the connected repository (the gitrepo package behind
// the guarded dialer). Failures are *Error with the Reason* codes above.
type RepoFetcher interface {
	// Resolve returns the commit ref names ("" = the remote's HEAD).
	Resolve(ctx context.Context, c Cluster, ref string) (commit string, err error)
	// Tree returns the files at commit (paths relative, "/"-separated);
	// ref is what the commit was resolved from (a server that will not send
	// a commit by id is asked for the ref, deepened).
	Tree(ctx context.Context, c Cluster, ref, commit string) (map[string][]byte, error)
}

// SecretMasker replaces secret values before anything leaves the server.
type SecretMasker interface {
	File(path string, content []byte) MaskedText
	// Redactor builds what cuts secrets (values masking removed, each also
	// in its encoded forms) from texts, with those of the redactors it
	// joins. It is built once per set — a render's, cached with the render
	// — so cutting costs time linear in each text, not in the set; joining
	// (secrets nil) compiles nothing.
	Redactor(secrets []string, join ...Redactor) Redactor
}

// Redactor cuts one request's (or one render's) secrets from a text.
type Redactor interface {
	Redact(text string) string
}

// MaskedText is masked content and the secret values masking removed from
// it. One request collects the secrets of everything it masks — an app's
// inputs (values files, the source's inline values) and its rendered
// output — and cuts them from every other text it returns or logs (render
// errors, notes, tool results): a tool's message may quote a value.
type MaskedText struct {
	Content []byte
	Secrets []string
}

// RepoView is the repo tab and the chat read tools over the connected
// repository: folders and the apps using them, files, masked.
type RepoView struct {
	Clusters ClusterStore
	ArgoCD   *ArgoCD
	Fetcher  RepoFetcher // nil: the repo tab is not configured (repo_unreachable)
	Masker   SecretMasker
	// Renderer renders apps' sources and ManifestMasker masks the output
	// the renderer did not mask itself (RenderOutput.Masked; nil Renderer:
	// manifests are not available).
	Renderer       ManifestRenderer
	ManifestMasker ManifestMasker
	// Charts downloads charts of Helm-repository sources (nil: such
	// sources are source_type_unsupported).
	Charts ChartFetcher
	// Versions gives the cluster's Kubernetes and API versions for Helm
	// (nil: Helm's defaults).
	Versions ClusterVersions
	// Queue bounds concurrent renders fairly across teams (nil: unbounded).
	Queue *RenderQueue
	// RenderCacheBytes bounds the masked renders kept, a team at most half
	// (0: DefaultRenderCacheBytes).
	RenderCacheBytes int64

	renders renderCache
	files   fileCache
}

// fileCache keeps masked files by (team, repository, commit, path), so a
// warm answer does no scanning. Only files up to maxCachedFile are kept,
// which bounds it to about 128 MiB.
type fileCache struct {
	once  sync.Once
	cache *lru.Cache[string, string]
}

const (
	maxCachedFile  = 256 << 10
	maxCachedFiles = 512
)

func (c *fileCache) get() *lru.Cache[string, string] {
	c.once.Do(func() { c.cache, _ = lru.New[string, string](maxCachedFiles) })
	return c.cache
}

// RepoTree is the folder listing of the connected repository at a commit.
type RepoTree struct {
	RepoURL   string       `json:"repo_url"`
	Ref       string       `json:"ref"`
	Commit    string       `json:"commit"`
	Folders   []RepoFolder `json:"folders"`
	Truncated bool         `json:"truncated"`
	// AppsUnavailable says why folders carry no app links (limited_access,
	// or the reason the Applications could not be read); "" when they do.
	AppsUnavailable Reason `json:"apps_unavailable,omitempty"`
}

// RepoFile is one file of the connected repository, masked.
type RepoFile struct {
	Path   string `json:"path"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Size   int    `json:"size"`
	// Binary files carry no content; Content is masked text otherwise.
	Binary    bool   `json:"binary"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

// connected returns the team's cluster with a connected repository.
func (s *RepoView) connected(ctx context.Context, p Principal, clusterID string) (Cluster, error) {
	c, err := s.Clusters.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return c, err
	}
	if c.GitOpsRepo == "" {
		return c, ErrRepoNotConnected()
	}
	if s.Fetcher == nil {
		return c, ReasonError(EUPSTREAM, ReasonRepoUnreachable, "The repository cannot be read from this server.")
	}
	return c, nil
}

// at resolves ref and reads the tree at that commit.
func (s *RepoView) at(ctx context.Context, c Cluster, ref string) (string, map[string][]byte, error) {
	commit, err := s.Fetcher.Resolve(ctx, c, ref)
	if err != nil {
		return "", nil, err
	}
	files, err := s.Fetcher.Tree(ctx, c, ref, commit)
	return commit, files, err
}

// Tree lists the repository's folders under dir (all when ""), each with
// the apps that use it. On a LIMITED cluster (or when Applications cannot
// be read) the folders come without app links and AppsUnavailable says why.
func (s *RepoView) Tree(ctx context.Context, p Principal, clusterID, ref, dir string) (RepoTree, error) {
	if err := checkRepoPath("path", dir); err != nil {
		return RepoTree{}, err
	}
	c, err := s.connected(ctx, p, clusterID)
	if err != nil {
		return RepoTree{}, err
	}
	commit, files, err := s.at(ctx, c, ref)
	if err != nil {
		return RepoTree{}, err
	}
	t := RepoTree{RepoURL: c.GitOpsRepo, Ref: ref, Commit: commit}
	var apps []Application
	switch {
	case c.AccessLevel != AccessFull:
		t.AppsUnavailable = ReasonLimitedAccess
	case s.ArgoCD == nil:
		t.AppsUnavailable = "argocd_unavailable"
	default:
		if snap := s.ArgoCD.Cache.Get(ctx, c, false); snap.Err != nil {
			t.AppsUnavailable = ErrorReason(snap.Err)
			if t.AppsUnavailable == "" {
				t.AppsUnavailable = ReasonClusterUnreachable
			}
		} else {
			apps = snap.Apps()
		}
	}
	dir = strings.Trim(dir, "/")
	t.Folders, t.Truncated = RepoFolders(files, dir, apps, c.GitOpsRepo)
	if dir != "" && len(t.Folders) == 0 {
		return RepoTree{}, ReasonError(ENOTFOUND, ReasonPathNotFound, "No folder "+dir+" in the repository at "+shortCommit(commit)+".")
	}
	return t, nil
}

// File returns one file, masked: binary files as metadata only, text cut
// at MaxRepoFileBytes.
func (s *RepoView) File(ctx context.Context, p Principal, clusterID, file, ref string) (RepoFile, error) {
	if err := checkRepoPath("path", file); err != nil {
		return RepoFile{}, err
	}
	if strings.Trim(file, "/") == "" {
		var v ValidationErrors
		v.Add("path", "must name a file")
		return RepoFile{}, v.Err()
	}
	c, err := s.connected(ctx, p, clusterID)
	if err != nil {
		return RepoFile{}, err
	}
	commit, files, err := s.at(ctx, c, ref)
	if err != nil {
		return RepoFile{}, err
	}
	name := path.Clean(strings.Trim(file, "/"))
	body, ok := files[name]
	if !ok {
		return RepoFile{}, ReasonError(ENOTFOUND, ReasonPathNotFound, "No file "+name+" in the repository at "+shortCommit(commit)+".")
	}
	f := RepoFile{Path: name, Ref: ref, Commit: commit, Size: len(body)}
	if isBinary(body) {
		f.Binary = true
		return f, nil
	}
	if len(body) > MaxRepoFileBytes {
		body, f.Truncated = body[:MaxRepoFileBytes], true
		for len(body) > 0 && !utf8.Valid(body) { // do not end inside a character
			body = body[:len(body)-1]
		}
	}
	key := strings.Join([]string{c.TeamID, NormalizeRepoURL(c.GitOpsRepo), commit, name, strconv.FormatBool(f.Truncated)}, "\x00")
	if masked, ok := s.files.get().Get(key); ok {
		f.Content = masked
		return f, nil
	}
	f.Content = string(s.Masker.File(name, body).Content)
	if len(body) <= maxCachedFile {
		s.files.get().Add(key, f.Content)
	}
	return f, nil
}

// checkRepoPath refuses paths that could leave the tree.
func checkRepoPath(field, p string) error {
	var v ValidationErrors
	switch {
	case len(p) > 4096:
		v.Add(field, "must be at most 4096 bytes")
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		v.Add(field, "must be a valid path")
	case slices.Contains(strings.Split(strings.Trim(p, "/"), "/"), ".."):
		v.Add(field, "must stay inside the repository (no ..)")
	}
	return v.Err()
}

// isBinary reports content that is not text: a NUL byte in its first 8 KB
// (as Git decides), or invalid UTF-8.
func isBinary(b []byte) bool {
	head := b[:min(len(b), 8000)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head[:validPrefix(head)])
}

// validPrefix trims an incomplete character at the end of head so a cut in
// the middle of one does not count as binary.
func validPrefix(head []byte) int {
	n := len(head)
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.Valid(head[:n]); i++ {
		n--
	}
	if !utf8.Valid(head[:n]) {
		return len(head)
	}
	return n
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// Tool answers of the chat read tools: plain text for the model, at most
// MaxToolText code points. Git and not-found failures are sentences in the
// text; only auth, tenancy and malformed requests are errors.

// ToolAnswer is a read tool's answer.
type ToolAnswer struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// notConnectedText is the tools' answer without a connected repository.
func notConnectedText(lang string) string {
	if lang == "en" {
		return "Connect a repository to see this."
	}
	return "레포를 연결하면 볼 수 있어요."
}

// renderBusyText is the tools' answer when renders are busy (render_busy).
func renderBusyText(lang string) string {
	if lang == "en" {
		return "Renders are busy right now; try again shortly."
	}
	return "지금은 렌더링이 몰려 있어요. 잠시 후 다시 시도해 주세요."
}

// toolAnswer turns a result or a failure into a tool answer; tenancy and
// validation failures stay errors.
func toolAnswer(text string, err error, lang string) (ToolAnswer, error) {
	if err != nil {
		switch code := ErrorCode(err); {
		case ErrorReason(err) == ReasonRepoNotConnected:
			text = notConnectedText(lang)
		case ErrorReason(err) == ReasonRenderBusy:
			text = renderBusyText(lang)
		case malformedRequest(err) || code == EUNAUTHENTICATED || code == EFORBIDDEN || ErrorReason(err) == ReasonClusterNotFound:
			return ToolAnswer{}, err
		default:
			text = ErrorMessage(err)
		}
	}
	out, cut := ToolText(text, MaxToolText, lang)
	return ToolAnswer{Text: out, Truncated: cut}, nil
}

// TreeTool is repo_tree for the agent.
func (s *RepoView) TreeTool(ctx context.Context, p Principal, clusterID, ref, dir, lang string) (ToolAnswer, error) {
	t, err := s.Tree(ctx, p, clusterID, ref, dir)
	if err != nil {
		return toolAnswer("", err, lang)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s @ %s\n", t.RepoURL, shortCommit(t.Commit))
	if t.AppsUnavailable != "" {
		fmt.Fprintf(&b, "(apps not shown: %s)\n", t.AppsUnavailable)
	}
	for _, f := range t.Folders {
		b.WriteString(f.Path + "/")
		for i, a := range f.Apps {
			sep := "  ← "
			if i > 0 {
				sep = ", "
			}
			b.WriteString(sep + a.Name + " (" + a.Via + ")")
		}
		b.WriteByte('\n')
	}
	if t.Truncated {
		fmt.Fprintf(&b, "(only the first %d folders are listed)\n", MaxRepoFolders)
	}
	return toolAnswer(b.String(), nil, lang)
}

// FileTool is repo_file for the agent.
func (s *RepoView) FileTool(ctx context.Context, p Principal, clusterID, file, ref, lang string) (ToolAnswer, error) {
	f, err := s.File(ctx, p, clusterID, file, ref)
	if err != nil {
		return toolAnswer("", err, lang)
	}
	if f.Binary {
		return toolAnswer(fmt.Sprintf("%s @ %s is a binary file of %d bytes.", f.Path, shortCommit(f.Commit), f.Size), nil, lang)
	}
	return toolAnswer(fmt.Sprintf("%s @ %s\n%s", f.Path, shortCommit(f.Commit), f.Content), nil, lang)
}

// malformedRequest reports an error about the request itself — a field it
// got wrong, or input that does not parse — rather than an outcome the
// model should read (a repository too large, a render that failed, a
// source that is not supported: those carry their own reason).
func malformedRequest(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == EINVALID || (e.Code == EVALIDATION && (len(e.Fields) > 0 || e.Reason == "" || e.Reason == ReasonValidationFailed))
}

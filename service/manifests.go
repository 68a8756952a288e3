package service

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// RenderInput is one source to render, as Argo CD's repo server would.
type RenderInput struct {
	Files map[string][]byte
	// RefFiles are the trees of a multi-source app's ref sources, by ref
	// name ("values" for "$values/...").
	RefFiles  map[string]map[string][]byte
	Spec      json.RawMessage // the source object (Argo CD's field names)
	AppName   string
	Namespace string
	// KustomizeBuildOptions is argocd-cm's kustomize.buildOptions.
	KustomizeBuildOptions string
	// KubeVersion and APIVersions are the cluster's, for Helm's
	// Capabilities ("" and nil: Helm's defaults, with a note).
	KubeVersion string
	APIVersions []string
}

// ClusterVersions tells a cluster's Kubernetes version and API versions
// (from cached discovery), which Argo CD passes to Helm.
type ClusterVersions interface {
	ClusterVersion(ctx context.Context, c Cluster) (version string, apiVersions []string, err error)
}

// RenderOutput is a render's result; Code is "" on success, else
// render_failed or source_type_unsupported (Reason refines it).
type RenderOutput struct {
	Manifests  []byte
	SourceType string
	Notes      []string
	Code       Reason
	Reason     Reason
	Message    string
	// Masked reports that the renderer masked Manifests, Notes and Message
	// itself (the render child, under its limits), and Secrets are the
	// values it masked; otherwise the service masks the output
	// (ManifestMasker) and the message.
	Masked  bool
	Secrets []string
}

// ManifestRenderer renders a source (the render package, in a child
// process with limits).
type ManifestRenderer interface {
	Render(ctx context.Context, in RenderInput) (RenderOutput, error)
}

// ChartFetcher downloads a chart from a Helm repository (anonymously,
// through the guarded dialer): its files keyed "<chart>/...".
type ChartFetcher interface {
	Chart(ctx context.Context, repoURL, chart, version string) (map[string][]byte, error)
}

// withPath returns the source spec with path set (a Helm repository
// chart renders from the folder it was extracted into).
func withPath(spec json.RawMessage, p string) json.RawMessage {
	m := map[string]any{}
	if len(spec) > 0 && json.Unmarshal(spec, &m) != nil {
		m = map[string]any{}
	}
	m["path"] = p
	out, err := json.Marshal(m)
	if err != nil {
		return spec
	}
	return out
}

// ManifestMasker masks rendered multi-document YAML.
type ManifestMasker interface {
	Manifests(yaml []byte) MaskedText
}

// SourceManifests is one source's part of an app's manifests.
type SourceManifests struct {
	RepoURL    string       `json:"repo_url"`
	Path       string       `json:"path"`
	Commit     string       `json:"commit"`
	SourceType string       `json:"source_type"`
	Notes      []string     `json:"notes"`
	Error      *SourceError `json:"error,omitempty"`
	Manifests  string       `json:"manifests"`

	// redactor cuts the values masking removed from the source's inputs
	// and output from the request's other texts; built once, cached with
	// the render.
	redactor Redactor
}

// SourceError is why one source did not render.
type SourceError struct {
	Code Reason `json:"code"`
	// Reason refines Code (helm_dependencies_missing, render_timeout, ...).
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message"`
}

// AppManifests is the YAML an app applies, rendered per source as Argo CD
// last compared it, masked.
type AppManifests struct {
	AppID string `json:"app_id"`
	// RevisionSource is "compared" (status.sync: what Argo CD last
	// compared) or "target_revision" (status empty: the targetRevision
	// resolved now).
	RevisionSource string            `json:"revision_source"`
	Sources        []SourceManifests `json:"sources"`

	redactor Redactor // every source's, see SourceManifests
}

// Manifests renders an app's sources: Git sources of the connected
// repository at the compared revision(s), masked, cached per commit. A
// single-source app's failure is the answer's error; a multi-source app
// answers with each source's error beside the sources that rendered.
func (s *RepoView) Manifests(ctx context.Context, p Principal, clusterID, appID string) (AppManifests, error) {
	c, err := s.connected(ctx, p, clusterID)
	if err != nil {
		return AppManifests{}, err
	}
	if s.ArgoCD == nil || s.Renderer == nil {
		return AppManifests{}, ReasonError(EUPSTREAM, ReasonRepoUnreachable, "Rendering is not available on this server.")
	}
	_, snap, err := s.ArgoCD.snapshot(ctx, p, clusterID, false)
	if err != nil {
		return AppManifests{}, err
	}
	app, ok := snap.App(appID)
	if !ok {
		return AppManifests{}, ErrAppNotFound()
	}
	out := AppManifests{AppID: app.ID, Sources: []SourceManifests{}}
	var sources []AppSource
	var revisions []string
	sources, revisions, out.RevisionSource = comparedSources(app)
	var kubeVersion string
	var apiVersions []string
	if s.Versions != nil {
		// Without them Helm's defaults apply (the render says so in a note).
		kubeVersion, apiVersions, _ = s.Versions.ClusterVersion(ctx, c)
	}
	refs := s.refSources(ctx, c, sources, revisions)
	var rendered []SourceManifests
	for i, src := range sources {
		if src.Ref != "" && src.Path == "" {
			continue // a values-only source
		}
		part := s.renderSource(ctx, c, app, renderEnv{settings: snap.Settings, kubeVersion: kubeVersion, apiVersions: apiVersions},
			src, revisionAt(revisions, i), refs)
		rendered = append(rendered, part)
	}
	// One redaction set for the request: a source's secrets are cut from
	// every source's error and notes. Joining compiles nothing.
	joined := make([]Redactor, 0, len(rendered))
	for _, part := range rendered {
		if part.redactor != nil {
			joined = append(joined, part.redactor)
		}
	}
	out.redactor = s.Masker.Redactor(nil, joined...)
	for i := range rendered {
		rendered[i] = s.redacted(rendered[i], out.redactor)
	}
	out.Sources = rendered
	if len(rendered) == 1 && rendered[0].Error != nil {
		e := rendered[0].Error
		code := EVALIDATION
		switch e.Code {
		case ReasonRepoNotConnected, ReasonRepoMismatch:
			code = ECONFLICT
		case ReasonRepoUnreachable:
			code = EUPSTREAM
		case ReasonRefNotFound, ReasonPathNotFound:
			code = ENOTFOUND
		case ReasonRenderBusy:
			return AppManifests{}, ErrRenderBusy(s.Queue.RetryAfter())
		}
		return AppManifests{}, &Error{Code: code, Reason: e.Code, Cause: e.Reason, Message: e.Message}
	}
	return out, nil
}

// comparedSources are the sources Argo CD compared and their revisions
// ("compared"), or the app's sources to resolve now ("target_revision")
// when it compared none.
func comparedSources(app Application) ([]AppSource, []string, string) {
	sources, revisions := app.Sync.ComparedTo, app.Sync.Revisions
	if len(revisions) == 0 && app.Sync.Revision != "" {
		revisions = []string{app.Sync.Revision}
	}
	switch {
	case app.HydratedSource != nil:
		// Argo CD syncs the hydrated branch (the sync source), not the dry
		// source people commit to: at the revision it compared, else the
		// branch resolved now.
		if app.Sync.Revision != "" {
			return []AppSource{*app.HydratedSource}, []string{app.Sync.Revision}, "compared"
		}
		return []AppSource{*app.HydratedSource}, nil, "target_revision"
	case len(sources) == 0 || len(revisions) != len(sources):
		return app.Sources, nil, "target_revision"
	}
	return sources, revisions, "compared"
}

func revisionAt(revisions []string, i int) string {
	if i < len(revisions) {
		return revisions[i]
	}
	return ""
}

// treeAt reads the tree at commit, or at ref resolved now when commit is "".
func (s *RepoView) treeAt(ctx context.Context, c Cluster, ref, commit string) (map[string][]byte, string, error) {
	if commit == "" {
		var err error
		if commit, err = s.Fetcher.Resolve(ctx, c, ref); err != nil {
			return nil, "", err
		}
	}
	files, err := s.Fetcher.Tree(ctx, c, ref, commit)
	return files, commit, err
}

// renderEnv is what a render depends on besides the source and its files.
type renderEnv struct {
	settings    ArgoCDSettings
	kubeVersion string
	apiVersions []string
}

// renderSource renders one source (from the cache when the same inputs
// were rendered before), masked.
func (s *RepoView) renderSource(ctx context.Context, c Cluster, app Application, env renderEnv, src AppSource,
	commit string, refs refSources) SourceManifests {
	part := SourceManifests{RepoURL: src.RepoURL, Path: src.Path, Notes: []string{}}
	files, commit, spec, failure := s.sourceFiles(ctx, c, src, commit)
	if failure != nil {
		part.Error = failure
		return part
	}
	part.Commit = commit
	key := renderKey(c, app, env, src, commit, spec, refs)
	if hit, ok := s.renders.get(c.TeamID, key); ok {
		return hit
	}
	v, _, _ := s.renders.flight.Do(key, func() (any, error) {
		return s.renderFlight(ctx, c, app, env, part, files, spec, refs, key), nil
	})
	return v.(SourceManifests)
}

// sourceFiles reads what one source renders from: a chart from its Helm
// repository, or the connected repository's tree at commit (ref resolved
// now when commit is ""). It returns the files, the commit (a chart's
// version) and the spec to render, or the error the source shows.
func (s *RepoView) sourceFiles(ctx context.Context, c Cluster, src AppSource, commit string) (map[string][]byte, string,
	json.RawMessage, *SourceError) {
	fail := func(code Reason, msg string) (map[string][]byte, string, json.RawMessage, *SourceError) {
		return nil, "", nil, &SourceError{Code: code, Message: msg}
	}
	var files map[string][]byte
	var err error
	spec := src.Spec
	if src.Chart != "" {
		// A chart from a Helm repository: its compared revision is the
		// chart version (targetRevision, a version or constraint, without
		// status).
		if s.Charts == nil {
			return fail(ReasonSourceTypeUnsupported, "Charts from Helm repositories ("+src.Chart+") are not rendered on this server.")
		}
		version := commit
		if version == "" {
			version = src.TargetRevision
		}
		if files, err = s.Charts.Chart(ctx, src.RepoURL, src.Chart, version); err == nil {
			commit, spec = version, withPath(src.Spec, src.Chart)
		}
	} else {
		if NormalizeRepoURL(src.RepoURL) != NormalizeRepoURL(c.GitOpsRepo) {
			return fail(ReasonRepoMismatch, "The source's repository is not the one connected to this cluster: connect it to see its YAML.")
		}
		files, commit, err = s.treeAt(ctx, c, src.TargetRevision, commit)
	}
	if err != nil {
		reason := ErrorReason(err)
		if reason == "" {
			reason = ReasonRepoUnreachable
		}
		return fail(reason, ErrorMessage(err))
	}
	return files, commit, spec, nil
}

// renderFlight renders p's source from files in one render queue slot,
// masks the result and caches it under key when it may be: the body of the
// flight that callers of the same inputs share.
func (s *RepoView) renderFlight(ctx context.Context, c Cluster, app Application, env renderEnv, p SourceManifests,
	files map[string][]byte, spec json.RawMessage, refs refSources, key string) SourceManifests {
	refFiles := refs.files
	var secrets []string
	// Callers collapsed into this flight share one slot. The flight
	// outlives any one caller, so neither the wait nor the render ends
	// with the first caller's context.
	release, err := s.Queue.Acquire(context.WithoutCancel(ctx), c.TeamID)
	if err != nil {
		p.Error = &SourceError{Code: ReasonRenderBusy, Message: ErrorMessage(err)}
		return p // not cached: the next request queues again
	}
	defer release()
	out, err := s.Renderer.Render(context.WithoutCancel(ctx), RenderInput{Files: files, RefFiles: refFiles, Spec: spec,
		AppName: app.Name, Namespace: app.Destination.Namespace, KustomizeBuildOptions: env.settings.KustomizeBuildOptions,
		KubeVersion: env.kubeVersion, APIVersions: env.apiVersions})
	switch {
	case err != nil:
		p.Error = &SourceError{Code: ReasonRenderFailed, Message: "The render could not run."}
		return p // a failure to run is not cached
	case out.Code != "" && out.Masked:
		p.SourceType, p.Error = out.SourceType, &SourceError{Code: out.Code, Reason: out.Reason, Message: out.Message}
	case out.Code != "":
		// A tool's message may quote a template's values: masked, and
		// cut of every secret masked in the source's inputs.
		msg := s.Masker.File("render-error.txt", []byte(out.Message))
		p.SourceType, p.Error = out.SourceType, &SourceError{Code: out.Code, Reason: out.Reason, Message: string(msg.Content)}
		secrets = append(secrets, msg.Secrets...)
	case out.Masked:
		// Masked in the child, under its limits: masking again here
		// would spend the server's memory and CPU on a tenant's output.
		p.SourceType, p.Manifests = out.SourceType, string(out.Manifests)
	default:
		m := s.ManifestMasker.Manifests(out.Manifests)
		p.SourceType, p.Manifests = out.SourceType, string(m.Content)
		secrets = append(secrets, m.Secrets...)
	}
	secrets = append(secrets, out.Secrets...)
	if out.Notes != nil {
		p.Notes = slices.Clone(out.Notes)
	}
	secrets = append(secrets, s.inputSecrets(files, refFiles, spec)...)
	p.redactor = s.Masker.Redactor(secrets)
	p = s.redacted(p, p.redactor)
	if cacheableRender(out) && !refs.unread {
		s.renders.add(s.RenderCacheBytes, c.TeamID, key, p)
	}
	return p
}

// redacted returns part with r's secrets cut from its error and notes.
func (s *RepoView) redacted(part SourceManifests, r Redactor) SourceManifests {
	if r == nil {
		return part
	}
	if part.Error != nil {
		e := *part.Error
		e.Message = r.Redact(e.Message)
		part.Error = &e
	}
	notes := make([]string, len(part.Notes))
	for i, n := range part.Notes {
		notes[i] = r.Redact(n)
	}
	part.Notes = notes
	return part
}

// ManifestsTool is app_manifests for the agent.
func (s *RepoView) ManifestsTool(ctx context.Context, p Principal, clusterID, appID, lang string) (ToolAnswer, error) {
	m, err := s.Manifests(ctx, p, clusterID, appID)
	if err != nil {
		return toolAnswer("", err, lang)
	}
	var b strings.Builder
	for _, src := range m.Sources {
		// The request's redaction set covers every line besides the
		// masked manifests themselves.
		b.WriteString(m.redactor.Redact("# "+src.RepoURL+" "+src.Path+" @ "+shortCommit(src.Commit)+" ("+src.SourceType+")") + "\n")
		if src.Error != nil {
			msg := src.Error.Message
			if src.Error.Code == ReasonRenderBusy {
				msg = renderBusyText(lang)
			}
			b.WriteString(m.redactor.Redact("# "+string(src.Error.Code)+": "+msg) + "\n")
			continue
		}
		b.WriteString(src.Manifests)
		if !strings.HasSuffix(src.Manifests, "\n") {
			b.WriteByte('\n')
		}
	}
	return toolAnswer(b.String(), nil, lang)
}

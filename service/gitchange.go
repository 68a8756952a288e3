package service

import (
	"context"
	"encoding/json"
	"fmt"
	pathpkg "path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ReasonGitChangeUnavailable: a plan's fields are not all known in Git
// (pending, unavailable, or no field at all), so no patch can be made.
const ReasonGitChangeUnavailable Reason = "git_change_unavailable"

// Reasons a field of a plan is left out of its Git change.
const (
	UnsupportedMasked          = "masked"            // the value must never be written
	UnsupportedNoPlannedValue  = "no_planned_value"  // the plan names the field without a value
	UnsupportedNotInGit        = "not_in_git"        // Git does not set the field (adding it is not done yet)
	UnsupportedValueShape      = "value_shape"       // an object or list, or a value over several lines
	UnsupportedSecretInContext = "secret_in_context" // the hunk's context would hold a masked value
	UnsupportedNotManifest     = "not_manifest"      // set by something else than a manifest or patch line
	UnsupportedOutsideApp      = "outside_app_path"  // the file is outside the app's path (a base other apps share)
	UnsupportedOtherRevision   = "other_revision"    // found at another commit than the patch's base (another app)
	UnsupportedAppOverride     = "application_spec"  // set in the Application's spec (helm parameters, values), not in the repository
	UnsupportedTransformed     = "value_transformed" // a template transforms the values key (tpl, a function): its new value cannot be told
	UnsupportedSharedAnchor    = "shared_anchor"     // the values key is set through a YAML alias or << merge: its line is shared
)

// GitChange is a plan's change written as a patch to the connected
// repository: what "open a PR with the same change" would push.
type GitChange struct {
	RepoURL      string             `json:"repo_url"`
	BaseRevision string             `json:"base_revision"`
	Files        []GitChangeFile    `json:"files"`
	Unsupported  []GitChangeOmitted `json:"unsupported"`
}

// GitChangeFile is one file's unified diff against BaseRevision.
type GitChangeFile struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}

// GitChangeOmitted is a field the patch leaves out, and why.
type GitChangeOmitted struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// GitChanges writes plans' changes as patches to the connected repository.
type GitChanges struct {
	Plans    PlanStore
	Clusters ClusterStore
	Fetcher  RepoFetcher
	Masker   SecretMasker
}

// planField is one field of a plan's Git change.
type planField struct {
	FieldPreview
	// appPath is the source path of the app managing the resource ("" when
	// not known): a file outside it may be another app's too.
	appPath string
}

// Change answers the Git change of a plan the caller may see: 409
// git_change_unavailable unless every changed field is set or unset in Git.
func (s *GitChanges) Change(ctx context.Context, p Principal, planID string) (GitChange, error) {
	if !validPlanID(planID) {
		return GitChange{}, ErrPlanNotFound()
	}
	plan, err := s.Plans.GetPlan(ctx, p, planID)
	if err != nil {
		return GitChange{}, err
	}
	fields, revision, err := gitFields(plan)
	if err != nil {
		return GitChange{}, err
	}
	c, err := s.Clusters.GetCluster(ctx, p.TeamID, plan.ClusterID)
	if err != nil {
		return GitChange{}, err
	}
	if c.GitOpsRepo == "" {
		return GitChange{}, ErrRepoNotConnected()
	}
	files, err := s.Fetcher.Tree(ctx, c, "", revision)
	if err != nil {
		return GitChange{}, err
	}
	return s.build(c.GitOpsRepo, revision, fields, files), nil
}

// build writes the fields' edits to files (the tree at revision) as
// unified diffs.
func (s *GitChanges) build(repoURL, revision string, fields []planField, files map[string][]byte) GitChange {
	c := Cluster{GitOpsRepo: repoURL}
	out := GitChange{RepoURL: c.GitOpsRepo, BaseRevision: revision, Files: []GitChangeFile{}, Unsupported: []GitChangeOmitted{}}
	edits := map[string]fileEdits{}
	editedFields := map[string][]string{}
	for _, f := range fields {
		path, e, reason := editFor(f.FieldPreview, files)
		if reason == "" && f.Git.Source.Revision != revision {
			reason = UnsupportedOtherRevision // another app's field, synced at another commit
		}
		if dir := pathpkg.Clean(f.appPath); reason == "" && f.appPath != "" && dir != "." && !strings.HasPrefix(path, dir+"/") {
			reason = UnsupportedOutsideApp // a shared base: the change would reach other apps too
		}
		if reason == "" && edits[path].conflicts(e) {
			reason = UnsupportedValueShape // two fields on one line
		}
		if reason != "" {
			out.Unsupported = append(out.Unsupported, GitChangeOmitted{Field: f.Field, Reason: reason})
			continue
		}
		if edits[path] == nil {
			edits[path] = fileEdits{}
		}
		edits[path].add(e)
		editedFields[path] = append(editedFields[path], f.Field)
	}
	paths := make([]string, 0, len(edits))
	for path := range edits {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		diff, ok := s.diff(path, files[path], edits[path])
		if !ok {
			for _, field := range editedFields[path] {
				out.Unsupported = append(out.Unsupported, GitChangeOmitted{Field: field, Reason: UnsupportedSecretInContext})
			}
			continue
		}
		out.Files = append(out.Files, GitChangeFile{Path: path, Diff: diff})
	}
	return out
}

// gitFields are the changed fields of a plan's payload.argocd with their
// Git part, and the one revision they were found at; an error when a
// field is not known in Git.
func gitFields(plan Plan) ([]planField, string, error) {
	w := ArgoCDFromPayload(plan.Payload)
	var fields []planField
	var states []string
	revision := ""
	if w != nil {
		for _, r := range w.Resources {
			for _, f := range r.Fields {
				fields = append(fields, planField{FieldPreview: f, appPath: appPath(w, r.Application)})
				state := "none"
				if f.Git != nil {
					state = f.Git.State
					if f.Git.Source != nil && revision == "" {
						revision = f.Git.Source.Revision
					}
				}
				states = append(states, r.Kind+"/"+r.Name+" "+f.Field+": "+state)
				if state != GitSet && state != GitUnset {
					revision = "!"
				}
			}
		}
	}
	if len(fields) == 0 || revision == "" || revision == "!" {
		msg := "The plan's changed fields are not all known in Git, so no patch can be written"
		if len(states) > 0 {
			msg += " (" + strings.Join(states, "; ") + ")"
		} else {
			msg += " (the plan names no changed field of a resource Argo CD manages)"
		}
		return nil, "", ReasonError(ECONFLICT, ReasonGitChangeUnavailable, msg+".")
	}
	return fields, revision, nil
}

// lineValue splits a manifest line that sets a key to a one-line scalar:
// the text up to the value, the value, and what follows it (a comment).
var lineValue = regexp.MustCompile(`^(\s*(?:-\s+)?(?:"[^"]*"|'[^']*'|[^\s#"'{}\[\]][^:#]*?)\s*:\s+)([^\s#{}\[\]|>&*!][^#]*?|"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')(\s+#.*)?$`)

// editFor is the edit of one field — its line rewritten with the planned
// value where Git sets it, lines added where Git does not — or why it is
// left out.
func editFor(f FieldPreview, files map[string][]byte) (string, lineEdit, string) {
	switch {
	case f.Masked:
		return "", lineEdit{}, UnsupportedMasked
	case f.Planned == nil:
		return "", lineEdit{}, UnsupportedNoPlannedValue
	case f.Git == nil || f.Git.Source == nil || !editableVia(f) || f.Git.Source.Line < 1:
		switch {
		case f.Git != nil && f.Git.State == GitUnset && (f.Git.Source == nil || f.Git.Source.Via == "helm_template"):
			return "", lineEdit{}, UnsupportedNotInGit
		case f.Git != nil && f.Git.Source != nil && f.Git.Source.Via == "application_override":
			return "", lineEdit{}, UnsupportedAppOverride
		case f.Git != nil && f.Git.Source != nil && f.Git.Source.Via == "helm_values":
			switch f.Git.Reason {
			case UnsupportedSecretInContext:
				return "", lineEdit{}, UnsupportedSecretInContext
			case "helm_key_shared":
				return "", lineEdit{}, UnsupportedSharedAnchor
			}
			return "", lineEdit{}, UnsupportedTransformed
		}
		return "", lineEdit{}, UnsupportedNotManifest
	}
	planned, key := f.Planned, f.Field
	if f.Git.Source.Via == "helm_values" {
		// The values key gets what makes the field planned.
		planned, key = f.Git.Source.KeyPlanned, "/"+strings.ReplaceAll(f.Git.Source.Key, ".", "/")
	}
	scalar, ok := yamlScalar(planned)
	content, found := files[f.Git.Source.Path]
	lines := strings.Split(string(content), "\n")
	if !ok || !found || f.Git.Source.Line > len(lines) {
		return "", lineEdit{}, UnsupportedValueShape
	}
	if ext := strings.ToLower(pathpkg.Ext(f.Git.Source.Path)); ext != ".yaml" && ext != ".yml" {
		return "", lineEdit{}, UnsupportedNotManifest // JSON manifests are not rewritten line by line
	}
	if f.Git.State == GitUnset && f.Git.Source.Via != "helm_values" {
		e, reason := addition(content, f.Git.Source.Line, f.Field, scalar)
		return f.Git.Source.Path, e, reason
	}
	line, cr := strings.CutSuffix(lines[f.Git.Source.Line-1], "\r")
	m := lineValue.FindStringSubmatch(line)
	if m == nil || !namesKey(m[1], key) {
		return "", lineEdit{}, UnsupportedValueShape
	}
	text := m[1] + scalar + m[3]
	if cr {
		text += "\r"
	}
	return f.Git.Source.Path, lineEdit{line: f.Git.Source.Line, replace: &text}, ""
}

// namesKey reports whether a line's key part names the pointer's last
// token (or, for a JSON 6902 patch and the replicas transformer, value and
// count): the line found is the field's.
func namesKey(keyPart, pointer string) bool {
	tokens, ok := SplitPointer(pointer)
	if !ok || len(tokens) == 0 {
		return false
	}
	key := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(keyPart), ":"))
	key = strings.TrimSpace(strings.TrimPrefix(key, "-"))
	key = strings.Trim(key, `"'`)
	return key == tokens[len(tokens)-1] || key == "value" || key == "count"
}

// plainScalar is text YAML reads back as the same string unquoted.
var plainScalar = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./:@+=-]*$`)

// yamlScalar writes a planned JSON scalar as YAML reads it back: numbers,
// booleans and null as they are, a string plain when YAML would not read
// it as something else, else double-quoted (JSON's quoting is YAML's).
func yamlScalar(v json.RawMessage) (string, bool) {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "", false
	}
	switch t := x.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		return strings.TrimSpace(string(v)), true
	case string:
		switch strings.ToLower(t) {
		case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		default:
			if plainScalar.MatchString(t) && !strings.HasSuffix(t, ":") {
				return t, true
			}
		}
		b, err := json.Marshal(t)
		return string(b), err == nil
	}
	return "", false
}

// Tool is git_change for the agent: the patch as text (each file's diff,
// then the fields left out), or the sentence saying why there is none.
// The plan must be of clusterID.
func (s *GitChanges) Tool(ctx context.Context, p Principal, clusterID, planID, lang string) (ToolAnswer, error) {
	if validPlanID(planID) {
		if plan, err := s.Plans.GetPlan(ctx, p, planID); err == nil && plan.ClusterID != clusterID {
			return ToolAnswer{}, ErrPlanNotFound()
		}
	}
	ch, err := s.Change(ctx, p, planID)
	if err != nil {
		if ErrorCode(err) == ENOTFOUND && ErrorReason(err) != ReasonRefNotFound {
			return ToolAnswer{}, err // tenancy: no such plan or cluster for the caller
		}
		return toolAnswer("", err, lang)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s @ %s\n", ch.RepoURL, ch.BaseRevision)
	for _, f := range ch.Files {
		b.WriteString(f.Diff)
	}
	for _, u := range ch.Unsupported {
		fmt.Fprintf(&b, "not in the patch: %s (%s)\n", u.Field, u.Reason)
	}
	return toolAnswer(b.String(), nil, lang)
}

// editableVia reports a field whose Git line the patch may rewrite (or,
// unset, whose manifest it may add to): a plain manifest, a kustomize
// resource or patch, the replicas transformer's count, a literal line of a
// chart template, and the values key that feeds the field when what it
// must hold is known.
func editableVia(f FieldPreview) bool {
	switch f.Git.Source.Via {
	case "manifest", "kustomize_resource":
		return true
	case "kustomize_patch":
		return f.Git.State == GitSet
	case "kustomize_transformer":
		return f.Git.State == GitSet && f.Field == "/spec/replicas"
	case "helm_template":
		return f.Git.State == GitSet
	case "helm_values":
		// Set, or unset where an empty key the template reads would set it.
		return f.Git.Source.KeyPlanned != nil
	}
	return false
}

// appPath is the source path of the app named in the warning ("" when it
// is not listed or has several sources).
func appPath(w *ArgoCDWarning, name string) string {
	for _, a := range w.Applications {
		if a.Name == name && len(a.Paths) <= 1 {
			return a.Path
		}
	}
	return ""
}

package ownership

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// warning builds the plan's argocd field from the managed resources: the
// strongest level wins; nil when nothing is managed.
func warning(found []managed, at time.Time, lang string) *service.ArgoCDWarning {
	if len(found) == 0 {
		return nil
	}
	w := &service.ArgoCDWarning{Summary: argocd.Summary, CheckedAt: at, Applications: []service.OwnershipApp{}}
	seen := map[string]bool{}
	var deciding *managed // the first resource at the strongest level: its cause words the warning
	for i, r := range found {
		w.Resources = append(w.Resources, r.OwnershipResource)
		if argocd.Stronger(r.Level, w.Level) {
			w.Level, deciding = r.Level, &found[i]
		}
		if r.app != nil && !seen[r.app.Namespace+"/"+r.app.Name] {
			seen[r.app.Namespace+"/"+r.app.Name] = true
			w.Applications = append(w.Applications, ownershipApp(*r.app))
		}
	}
	cause, manifestPaths := "", false
	if deciding != nil {
		cause = deciding.LevelCause
		manifestPaths = deciding.app != nil && deciding.app.ManifestGeneratePaths
	}
	w.Actions = pauseActions(found)
	w.Warning = argocd.WarningFor(w.Level, cause, manifestPaths, lang)
	if w.Level == service.LevelSelfHeal && cause == service.CausePolicy {
		if reverted := revertedFields(found, w.Level); len(reverted) > 0 {
			field, value := reverted[0].name, reverted[0].value
			w.Warning = argocd.RevertWarning(field, value, len(reverted)-1, lang)
		}
	}
	return w
}

// revertedField is a field Argo CD will put back: the last token of its
// pointer and Git's value as text.
type revertedField struct{ name, value string }

// revertedFields lists the fields of the resources at level whose Git
// value is known, shown (not masked) and not what the change plans.
func revertedFields(found []managed, level service.Level) []revertedField {
	var out []revertedField
	for _, r := range found {
		if r.Level != level {
			continue
		}
		for _, f := range r.Fields {
			if f.Masked || f.Git == nil || f.Git.State != service.GitSet || f.Git.Value == nil ||
				(f.Planned != nil && sameJSON(f.Planned, f.Git.Value)) {
				continue
			}
			tokens, ok := service.SplitPointer(f.Field)
			if !ok || len(tokens) == 0 {
				continue
			}
			out = append(out, revertedField{name: tokens[len(tokens)-1], value: valueText(f.Git.Value)})
		}
	}
	return out
}

// valueText is a JSON value as a sentence shows it: a string without
// quotes, anything else as JSON.
func valueText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// keep joins the warning of an earlier, complete detection with what an
// incomplete recheck found: a partial recheck must not weaken or drop a
// warning, nor hide a stronger level it did find. CheckedAt stays the
// time of the detection that ran fully (the earlier one, when there is one).
func keep(earlier, found *service.ArgoCDWarning, skipped service.RecheckSkipped, lang string) *service.ArgoCDWarning {
	if earlier == nil && found == nil {
		return nil
	}
	base := earlier
	if base == nil {
		base = found
	}
	w := &service.ArgoCDWarning{Summary: argocd.Summary, CheckedAt: base.CheckedAt, RecheckSkipped: &skipped,
		Applications: []service.OwnershipApp{}, Resources: []service.OwnershipResource{}}
	apps, resources := map[string]bool{}, map[string]bool{}
	for _, part := range []*service.ArgoCDWarning{earlier, found} {
		if part == nil {
			continue
		}
		w.Level = argocd.Strongest(w.Level, part.Level)
		for _, a := range part.Applications {
			if key := a.Namespace + "/" + a.Name; !apps[key] {
				apps[key] = true
				w.Applications = append(w.Applications, a)
			}
		}
		for _, r := range part.Resources {
			if key := strings.Join([]string{r.Group, r.Kind, r.Namespace, r.Name}, "/"); !resources[key] {
				resources[key] = true
				w.Resources = append(w.Resources, r)
			}
		}
	}
	w.Warning = argocd.Warning(w.Level, lang)
	return w
}

func ownershipApp(a service.Application) service.OwnershipApp {
	o := service.OwnershipApp{Name: a.Name, Namespace: a.Namespace, AutoSync: a.AutoSync, SelfHeal: a.SelfHeal,
		Prune: a.Prune, Paths: []string{}}
	for i, s := range a.Sources {
		if i == 0 {
			o.RepoURL, o.Path, o.TargetRevision = s.RepoURL, s.Path, s.TargetRevision
		}
		if s.Path != "" {
			o.Paths = append(o.Paths, s.Path)
		}
	}
	return o
}

// notInstalledNote says Argo CD is not installed in the cluster.
func notInstalledNote(lang string) string {
	if lang == "en" {
		return "Argo CD is not installed in this cluster: no local app manages these resources"
	}
	return "이 클러스터에는 ArgoCD가 설치돼 있지 않다: 이 리소스들을 관리하는 로컬 앱이 없다"
}

// settingsNote says argocd-cm could not be read and the defaults applied;
// why is the reader's English sentence.
func settingsNote(lang, why string) string {
	if lang == "en" {
		return why
	}
	return "argocd-cm을 읽지 못해 ArgoCD 기본 설정(인스턴스 라벨, 추적 방식, installationID, 시스템 전체 ignoreDifferences)으로 판단했다"
}

// note is the line read tools get about a managed resource.
func note(lang string, r service.OwnershipResource) string {
	obj := strings.ToLower(r.Kind) + "/" + r.Name
	if lang == "en" {
		return fmt.Sprintf("%s is managed by Argo CD app %s (%s)", obj, r.Application, r.Level)
	}
	return fmt.Sprintf("%s: ArgoCD 앱 %s 이 관리하는 리소스다 (%s)", obj, r.Application, r.Level)
}

// pauseActions offers to pause each app whose automated sync reverts a
// resource (self_heal, auto_sync), once per app; an app in a hub cluster
// names that cluster.
func pauseActions(found []managed) []service.WarningAction {
	var out []service.WarningAction
	seen := map[string]bool{}
	for _, r := range found {
		if r.app == nil || (r.Level != service.LevelSelfHeal && r.Level != service.LevelAutoSync) {
			continue
		}
		a := service.WarningAction{Kind: service.ActionPauseSync, App: r.app.ID}
		if r.hub != nil {
			a.ClusterID = r.hub.ID
		}
		if seen[a.ClusterID+"\x00"+a.App] {
			continue
		}
		seen[a.ClusterID+"\x00"+a.App] = true
		out = append(out, a)
	}
	return out
}

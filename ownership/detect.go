// Package ownership decides, per resource and just before a change, whether
// Argo CD manages it and how strongly it will revert the change. It never
// blocks a change: every failure becomes a "skipped" note on the answer.
package ownership

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kukie/gitops-server/argocd"
	"github.com/kukie/gitops-server/service"
)

// Summary is the approval card's headline for a managed change.
const Summary = "ArgoCD 관리 리소스 직접 변경"

// Detector runs detection against clusters, sharing the Argo CD snapshot
// cache with the app list and detail, so the screen and the card agree.
type Detector struct {
	Objects   service.ObjectReader
	Snapshots *service.SnapshotCache
	// Budget bounds a whole detection (default 10 s); each cluster call
	// has the reader's own timeout, cut to what is left.
	Budget time.Duration
	Now    func() time.Time
}

var _ service.OwnershipDetector = (*Detector)(nil)

type target struct {
	ref  service.ResourceRef
	info service.ObjectInfo
	err  error
}

// Detect checks the first MaxOwnershipTargets targets.
func (d *Detector) Detect(ctx context.Context, c service.Cluster, targets []service.ResourceRef, lang string) service.Ownership {
	start := d.Now()
	budget := d.Budget
	if budget == 0 {
		budget = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	out := service.Ownership{Notes: []string{}, Unmanaged: []service.Unmanaged{}}
	if len(targets) > service.MaxOwnershipTargets {
		targets, out.Truncated = targets[:service.MaxOwnershipTargets], true
	}

	// Reads run in parallel; the budget is enforced here, not trusted to the
	// client library (discovery calls take no context): targets not read
	// when it runs out are budget_exceeded, and their reads are abandoned.
	checked := make([]target, len(targets))
	type done struct {
		i int
		t target
	}
	results := make(chan done, len(targets))
	objects := d.Objects
	for i, ref := range targets {
		checked[i] = target{ref: ref, err: service.ReasonError(service.EUNAVAILABLE, "budget_exceeded",
			"The detection budget ran out before this resource was read.")}
		go func() {
			info, err := objects.ReadObject(ctx, c, ref)
			results <- done{i, target{ref: ref, info: info, err: err}}
		}()
	}
	received := 0
collect:
	for range targets {
		select {
		case r := <-results:
			checked[r.i] = r.t
			received++
		case <-ctx.Done():
			break collect
		}
	}
	if received == 0 && len(targets) > 0 && ctx.Err() != nil {
		// Nothing came back at all: the cluster does not answer.
		for i := range checked {
			checked[i].err = service.ReasonError(service.EUPSTREAM, "cluster_unreachable",
				"The cluster did not answer within the detection budget.")
		}
	}

	skip := func(reason, msg string) {
		if out.Skipped == nil {
			out.Skipped = &service.Skip{Reason: reason, Message: msg}
		}
	}
	// Applications come from the shared snapshot, read only when some
	// object carries tracking metadata; LIMITED clusters cannot read them.
	var snap *service.Snapshot
	needApps := false
	for _, t := range checked {
		needApps = needApps || (t.err == nil && t.info.Found && (t.info.Annotations[argocd.TrackingAnnotation] != "" ||
			t.info.Labels[argocd.InstanceLabel] != ""))
	}
	appsNote := ""
	switch {
	case !needApps:
	case c.AccessLevel != service.AccessFull:
		appsNote = "the cluster has limited access, so its Applications cannot be read"
	default:
		if s := d.Snapshots.Get(ctx, c, false); s.Err == nil {
			snap = s
		} else {
			reason := service.ErrorReason(s.Err)
			if reason == "" || ctx.Err() != nil {
				reason = budgetOr(ctx, "cluster_unreachable")
			}
			skip(reason, service.ErrorMessage(s.Err))
			appsNote = "the cluster's Applications could not be read (" + reason + ")"
		}
	}

	var resources []managed
	apps := map[string]service.Application{}
	var appOrder []string
	for _, t := range checked {
		resolved := service.ResolvedTarget{Group: t.ref.Group, Kind: t.ref.Kind, Namespace: t.ref.Namespace, Name: t.ref.Name}
		if t.err != nil && t.info.Kind != "" {
			// The kind resolved but the read failed: store what the cluster calls it.
			resolved.Group, resolved.Kind, resolved.Namespace = t.info.Group, t.info.Kind, t.info.Namespace
		}
		if t.err != nil {
			reason := service.ErrorReason(t.err)
			if reason == "" {
				reason = budgetOr(ctx, "cluster_unreachable")
			}
			skip(reason, service.ErrorMessage(t.err))
			out.Resolved = append(out.Resolved, resolved)
			continue
		}
		out.Checked++
		i := t.info
		resolved.Group, resolved.Kind, resolved.Namespace = i.Group, i.Kind, i.Namespace
		unmanaged := func(reason string) {
			out.Unmanaged = append(out.Unmanaged, service.Unmanaged{Group: i.Group, Kind: i.Kind, Namespace: i.Namespace,
				Name: i.Name, Reason: reason})
		}
		if !i.Found {
			unmanaged("object_not_found") // a create
			out.Resolved = append(out.Resolved, resolved)
			continue
		}
		res, app, ok := classify(c, i, t.ref.ChangedFields, snap, appsNote)
		if !ok {
			unmanaged(res.Reason)
		}
		if ok {
			resources = append(resources, res)
			resolved.AppNamespace, resolved.AppName = res.appNamespace, res.Application
			if app != nil {
				key := app.Namespace + "/" + app.Name
				if _, seen := apps[key]; !seen {
					apps[key] = *app
					appOrder = append(appOrder, key)
				}
			}
			out.Notes = append(out.Notes, note(lang, res.OwnershipResource))
		}
		out.Resolved = append(out.Resolved, resolved)
	}
	if len(resources) > 0 {
		w := &service.ArgoCDWarning{Summary: Summary, CheckedAt: d.Now().UTC(), Applications: []service.OwnershipApp{}}
		w.Level = service.LevelNotReverted
		for _, r := range resources {
			w.Resources = append(w.Resources, r.OwnershipResource)
			if r.Level.Stronger(w.Level) {
				w.Level = r.Level
			}
		}
		for _, key := range appOrder {
			w.Applications = append(w.Applications, ownershipApp(apps[key]))
		}
		w.Warning = Warning(w.Level, lang)
		out.ArgoCD = w
	}
	out.DurationMS = d.Now().Sub(start).Milliseconds()
	return out
}

func budgetOr(ctx context.Context, reason string) string {
	if ctx.Err() != nil {
		return "budget_exceeded"
	}
	return reason
}

// managed is a managed resource with the namespace of its app.
type managed struct {
	service.OwnershipResource
	appNamespace string
}

// classify decides whether Argo CD manages one existing object.
func classify(c service.Cluster, i service.ObjectInfo, changed []string, snap *service.Snapshot, appsNote string) (managed, *service.Application, bool) {
	res := managed{OwnershipResource: service.OwnershipResource{Group: i.Group, Kind: i.Kind, Name: i.Name, Namespace: i.Namespace}}
	find := func(ns, name string) *service.Application {
		if ns == "" {
			ns = c.ArgoCDNamespace
		}
		if snap == nil {
			return nil
		}
		if a, ok := snap.App(service.AppID(name, ns, c.ArgoCDNamespace)); ok {
			return &a
		}
		return nil
	}
	if id, ok := argocd.ParseTrackingID(i.Annotations[argocd.TrackingAnnotation]); ok &&
		id.RefersTo(i.Group, i.Kind, i.Namespace, i.Name, i.Namespaced) {
		res.Tracking, res.Application = "annotation", id.AppName
		res.appNamespace = id.AppNamespace
		if res.appNamespace == "" {
			res.appNamespace = c.ArgoCDNamespace
		}
		app := find(id.AppNamespace, id.AppName)
		if app == nil {
			res.Level = service.LevelUnknown
			res.Reason = "tracking annotation names app " + id.AppName + ", which is not in this cluster " +
				"(Argo CD may run in another cluster): the sync policy cannot be read"
			if appsNote != "" {
				res.Reason = "tracking annotation names app " + id.AppName + ", but " + appsNote
			}
			return res, nil, true
		}
		res.Level, res.Reason = level(*app, i, changed, "tracking annotation")
		return res, app, true
	}
	// A label alone proves nothing (Helm charts set it too) until the app
	// it names lists this object among its resources.
	if inst := i.Labels[argocd.InstanceLabel]; inst != "" {
		ns, name := argocd.SplitInstance(inst)
		app := find(ns, name)
		if app == nil || !lists(*app, i) {
			res.Reason = "label_not_confirmed"
			return res, nil, false
		}
		res.Tracking, res.Application, res.appNamespace = "label", app.Name, app.Namespace
		res.Level, res.Reason = level(*app, i, changed, "instance label confirmed by the app's status.resources")
		return res, app, true
	}
	res.Reason = "not_tracked"
	if i.Annotations[argocd.TrackingAnnotation] != "" {
		res.Reason = "copied_annotation"
	}
	return res, nil, false
}

func lists(a service.Application, i service.ObjectInfo) bool {
	for _, r := range a.Resources {
		if r.Group == i.Group && r.Kind == i.Kind && r.Name == i.Name && (!i.Namespaced || r.Namespace == i.Namespace) {
			return true
		}
	}
	return false
}

// AppLevel is the level of a resource an app manages, from its sync policy
// alone, with the reason in words. The app detail's resource rows use it,
// so the screen and the approval card never disagree.
func AppLevel(a service.Application) (service.Level, string) {
	return argocd.PolicyLevel(a), "app " + a.Name + ": " + policyWords(a)
}

// level is the object's revert level from its app's policy and
// ignoreDifferences, with the reason in words.
func level(a service.Application, i service.ObjectInfo, changed []string, how string) (service.Level, string) {
	policy, words := AppLevel(a)
	reason := how + "; " + words
	switch argocd.Ignores(a, i.Group, i.Kind, i.Namespace, i.Name, changed) {
	case argocd.IgnoredAndRespected:
		return service.LevelNotReverted, reason + "; every changed field is in ignoreDifferences and " +
			"RespectIgnoreDifferences=true: not reverted"
	case argocd.Ignored:
		return service.Weaker(policy, service.LevelAutoSync), reason + "; every changed field is in ignoreDifferences, " +
			"so self-heal leaves it, but the next sync rewrites it"
	}
	if len(changed) > 0 && len(a.IgnoreDifferences) > 0 {
		reason += "; ignoreDifferences does not cover every changed field"
	}
	return policy, reason
}

func policyWords(a service.Application) string {
	switch {
	case a.AutoSync && a.SelfHeal:
		return "auto-sync with selfHeal"
	case a.AutoSync:
		return "auto-sync without selfHeal"
	}
	return "no auto-sync"
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

func note(lang string, r service.OwnershipResource) string {
	obj := strings.ToLower(r.Kind) + "/" + r.Name
	if lang == "en" {
		return fmt.Sprintf("%s is managed by Argo CD app %s (%s)", obj, r.Application, r.Level)
	}
	return fmt.Sprintf("%s: ArgoCD 앱 %s 이 관리하는 리소스다 (%s)", obj, r.Application, r.Level)
}

// Warning is the card's sentence for a level, in Korean or English.
func Warning(l service.Level, lang string) string {
	ko := map[service.Level]string{
		service.LevelSelfHeal:    "곧 ArgoCD가 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요.",
		service.LevelUnknown:     "ArgoCD가 관리하는 리소스지만 sync 설정을 읽을 수 없어 언제 되돌아갈지 알 수 없어요. 유지하려면 PR을 같이 올리세요.",
		service.LevelAutoSync:    "다음 Git 변경이 동기화될 때 ArgoCD가 되돌려요(관계없는 변경이어도). 유지하려면 PR을 같이 올리세요.",
		service.LevelManual:      "ArgoCD가 스스로 되돌리지는 않지만 앱이 OutOfSync로 보이고, 다음 sync 때 되돌아가요.",
		service.LevelNotReverted: "앱이 바뀌는 필드를 무시하도록 설정돼 있어 ArgoCD가 되돌리지 않아요.",
	}
	en := map[service.Level]string{
		service.LevelSelfHeal:    "Argo CD will revert this soon. To keep it, pause sync or open a PR with the same change.",
		service.LevelUnknown:     "Argo CD manages this resource, but its sync policy cannot be read, so when it will be reverted is unknown. To keep it, open a PR with the same change.",
		service.LevelAutoSync:    "Argo CD will revert this at the next Git change it syncs, even an unrelated one. To keep it, open a PR with the same change.",
		service.LevelManual:      "Argo CD will not revert this by itself, but the app will show OutOfSync and the next sync will undo it.",
		service.LevelNotReverted: "The app ignores the changed fields, so Argo CD will not revert this change.",
	}
	if lang == "en" {
		return en[l]
	}
	return ko[l]
}

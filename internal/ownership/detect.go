// Package ownership decides, per resource and just before a change, whether
// Argo CD manages it and how strongly it will revert the change. It
// orchestrates the reads (objects, then the Applications of the shared
// snapshot) within a budget; the rules themselves live in package argocd.
// It never blocks a change: every failure becomes a "skipped" note.
package ownership

import (
	"context"
	"log/slog"
	"time"

	"github.com/kukie/gitops-server/service"
)

// Detector runs detection against clusters, sharing the Argo CD snapshot
// cache with the app list and detail, so the screen and the card agree.
type Detector struct {
	Objects   service.ObjectReader
	Snapshots *service.SnapshotCache
	// Budget bounds a whole detection (default 10 s); each cluster call
	// has the reader's own timeout, cut to what is left.
	Budget time.Duration
	Now    func() time.Time
	// Log receives the detail of failed reads (clients see only a reason
	// and a sentence); nil discards it.
	Log *slog.Logger
	// Masker judges which changed fields' values may be shown (nil: none).
	Masker service.ValueMasker
	// Git finds where the app's desired state sets each changed field
	// (nil: fields carry no Git part).
	Git service.GitLocator
	// Access reviews, on LIMITED clusters, whether Kukie's connection may
	// make each change (nil: no access part).
	Access service.TargetReviewer
	// Clusters and Secrets find, for an annotation whose app is not in the
	// target cluster, that app in the team's other Argo CD clusters
	// (hub-and-spoke); nil Secrets: no hub lookup.
	Clusters service.ClusterLister
	Secrets  *service.ClusterSecretCache
}

var _ service.OwnershipDetector = (*Detector)(nil)

// Detect checks the first MaxOwnershipTargets targets, using the shared
// snapshot of the cluster's Applications as it is.
func (d *Detector) Detect(ctx context.Context, c service.Cluster, targets []service.ResourceRef, lang string) service.Ownership {
	return d.detect(ctx, c, targets, lang, false)
}

// Recheck detects again with Applications read afresh (a user who paused
// sync as the warning advised and approves at once must see that). When
// it could not check everything, the earlier warning is kept, joined with
// what it found.
func (d *Detector) Recheck(ctx context.Context, c service.Cluster, targets []service.ResourceRef, earlier *service.ArgoCDWarning, lang string) service.Ownership {
	out := d.detect(ctx, c, targets, lang, true)
	if out.Skipped != nil {
		out.ArgoCD = keep(earlier, out.ArgoCD, service.RecheckSkipped{Reason: out.Skipped.Reason, At: d.Now().UTC()}, lang)
	}
	return out
}

// detect runs the steps: read the targets, read the Applications when
// some target carries tracking metadata, classify each target, and build
// the warning.
func (d *Detector) detect(ctx context.Context, c service.Cluster, targets []service.ResourceRef, lang string, refresh bool) service.Ownership {
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
	if !c.Readable() {
		// Access not in place (pending, degraded, being removed): not called.
		d.skip(ctx, &out, service.ErrNotReadable(c))
		return out
	}
	read := d.readTargets(ctx, c, targets)
	out.Access = d.targetAccess(ctx, c, read, lang)
	apps := d.readApplications(ctx, c, read, refresh)
	if apps.err != nil {
		d.skip(ctx, &out, apps.err)
	}
	if apps.notInstalled {
		out.Notes = append(out.Notes, notInstalledNote(lang))
	} else if apps.snap != nil && !apps.snap.Settings.Read && apps.snap.Settings.Note != "" {
		out.Notes = append(out.Notes, settingsNote(lang, apps.snap.Settings.Note))
	}
	var found []managed
	hubs := d.newHubs(c)
	for _, t := range read {
		res, ok := d.check(ctx, &out, c, t, apps, hubs, lang)
		if ok {
			found = append(found, res)
		}
	}
	redactAcross(found)
	out.ArgoCD = warning(found, d.Now().UTC(), lang)
	out.DurationMS = d.Now().Sub(start).Milliseconds()
	return out
}

// target is one target and what reading it gave.
type target struct {
	ref  service.ResourceRef
	info service.ObjectInfo
	err  error
}

// readTargets reads the objects in parallel. The budget is enforced here,
// not trusted to the client library (discovery calls take no context):
// targets not read when it runs out are budget_exceeded, and their reads
// are abandoned; when nothing answered at all, the cluster is unreachable.
func (d *Detector) readTargets(ctx context.Context, c service.Cluster, targets []service.ResourceRef) []target {
	read := make([]target, len(targets))
	type done struct {
		i int
		t target
	}
	results := make(chan done, len(targets))
	objects := d.Objects // abandoned reads must not touch d later
	for i, ref := range targets {
		read[i] = target{ref: ref, err: service.ReasonError(service.EUNAVAILABLE, service.ReasonBudgetExceeded,
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
			read[r.i] = r.t
			received++
		case <-ctx.Done():
			break collect
		}
	}
	if received == 0 && len(targets) > 0 && ctx.Err() != nil {
		for i := range read {
			read[i].err = service.ReasonError(service.EUPSTREAM, service.ReasonClusterUnreachable,
				"The cluster did not answer within the detection budget.")
		}
	}
	return read
}

// apps is the Applications detection could read, or why it could not.
type apps struct {
	snap *service.Snapshot
	// note says, for the reasons of annotated resources, why Applications
	// are missing ("" when they were read or not needed).
	note string
	// notInstalled is set when the cluster has no Application CRD: an
	// answer (nothing there manages objects through local Applications),
	// not a failure.
	notInstalled bool
	err          error
}

// settings are the cluster's argocd-cm settings, or the defaults when the
// snapshot was not read.
func (a apps) settings() service.ArgoCDSettings {
	if a.snap == nil {
		return service.ArgoCDSettings{}
	}
	return a.snap.Settings
}

// readApplications reads the shared snapshot whenever some target exists
// (an object Argo CD manages may carry no tracking metadata at all: it is
// then found in an app's status.resources); LIMITED clusters cannot read
// Applications. A cluster without Argo CD is an answer, not a skip.
func (d *Detector) readApplications(ctx context.Context, c service.Cluster, read []target, refresh bool) apps {
	needed := false
	for _, t := range read {
		needed = needed || (t.err == nil && t.info.Found)
	}
	switch {
	case !needed:
		return apps{}
	case c.AccessLevel != service.AccessFull:
		return apps{note: "the cluster has limited access, so its Applications cannot be read"}
	}
	s := d.Snapshots.Get(ctx, c, refresh)
	if s.Err == nil {
		return apps{snap: s}
	}
	reason := service.ErrorReason(s.Err)
	if reason == service.ReasonArgoCDNotInstalled {
		return apps{note: "Argo CD is not installed in this cluster (no Application CRD), so no local app's sync policy can be read",
			notInstalled: true}
	}
	if reason == "" || ctx.Err() != nil {
		reason = budgetOr(ctx, service.ReasonClusterUnreachable)
	}
	return apps{note: "the cluster's Applications could not be read (" + string(reason) + ")",
		err: &service.Error{Code: service.ErrorCode(s.Err), Reason: reason, Message: service.ErrorMessage(s.Err), Err: s.Err}}
}

// check classifies one read target into out, returning the managed
// resource when Argo CD manages it.
func (d *Detector) check(ctx context.Context, out *service.Ownership, c service.Cluster, t target, a apps, h *hubs, lang string) (managed, bool) {
	resolved := service.ResolvedTarget{Group: t.ref.Group, Kind: t.ref.Kind, Namespace: t.ref.Namespace, Name: t.ref.Name}
	if t.err != nil {
		if t.info.Kind != "" {
			// The kind resolved but the read failed: store what the cluster calls it.
			resolved.Group, resolved.Kind, resolved.Namespace = t.info.Group, t.info.Kind, t.info.Namespace
		}
		d.skip(ctx, out, t.err)
		out.Resolved = append(out.Resolved, resolved)
		return managed{}, false
	}
	out.Checked++
	i := t.info
	resolved.Group, resolved.Kind, resolved.Namespace, resolved.Checked = i.Group, i.Kind, i.Namespace, true
	defer func() { out.Resolved = append(out.Resolved, resolved) }()
	if !i.Found {
		out.Unmanaged = append(out.Unmanaged, unmanaged(i, "object_not_found")) // a create
		return managed{}, false
	}
	res, ok := classify(c, i, t.ref, a)
	if !ok {
		out.Unmanaged = append(out.Unmanaged, unmanaged(i, res.Reason))
		return managed{}, false
	}
	if res.Basis == service.BasisAnnotationUnconfirmed {
		d.fromHubs(ctx, h, &res, i, t.ref)
	}
	resolved.AppNamespace, resolved.AppName = res.appNamespace, res.Application
	fields, judged := fieldPreviews(d.Masker, t.ref, i)
	res.Fields, res.judged = fields, judged
	if d.Git != nil && res.app != nil && len(res.Fields) > 0 {
		appCluster := c
		if res.hub != nil {
			appCluster = *res.hub
		}
		res.Fields = d.Git.Locate(ctx, appCluster, *res.app, i, res.Fields)
		maskRevealing(res.Fields, judged)
		res.matchesGit(t.ref)
	}
	out.Notes = append(out.Notes, note(lang, res.OwnershipResource))
	if n := gitDisagrees(lang, res.OwnershipResource); n != "" {
		out.Notes = append(out.Notes, n)
	}
	return res, true
}

func unmanaged(i service.ObjectInfo, reason string) service.Unmanaged {
	return service.Unmanaged{Group: i.Group, Kind: i.Kind, Namespace: i.Namespace, Name: i.Name, Reason: reason}
}

// skip records the first failure on the answer (a reason and a sentence)
// and logs its detail, which may name the cluster's address.
func (d *Detector) skip(ctx context.Context, out *service.Ownership, err error) {
	reason := service.ErrorReason(err)
	if reason == "" {
		reason = budgetOr(ctx, service.ReasonClusterUnreachable)
	}
	if d.Log != nil {
		d.Log.WarnContext(ctx, "ownership detection skipped a read", "reason", reason, "err", err)
	}
	if out.Skipped == nil {
		out.Skipped = &service.Skip{Reason: reason, Message: service.ErrorMessage(err)}
	}
}

func budgetOr(ctx context.Context, reason service.Reason) service.Reason {
	if ctx.Err() != nil {
		return service.ReasonBudgetExceeded
	}
	return reason
}

package service

import (
	"context"
	"strings"
)

// parent is the app-of-apps parent that manages the Application ns/name
// with self-heal in this cluster (its app id, "" when none) and the
// card's note: why it is paused first and which other children stop
// following Git meanwhile (the blast radius), or, for a parent whose
// policy cannot be read here (another cluster's Argo CD), the warning.
func (s *SyncPauses) parent(ctx context.Context, p Principal, c Cluster, ns, name, lang string) (string, string) {
	if s.Detector == nil {
		return "", ""
	}
	own := s.Detector.Detect(ctx, c, []ResourceRef{{Group: "argoproj.io", Kind: "Application", Namespace: ns, Name: name}}, "en")
	w := own.ArgoCD
	if w == nil || len(w.Resources) == 0 {
		return "", ""
	}
	r := w.Resources[0]
	switch r.Level {
	case LevelSelfHeal:
		pns := c.ArgoCDNamespace
		for _, a := range w.Applications {
			if a.Name == r.Application {
				pns = a.Namespace
			}
		}
		id := s.appID(ctx, p, c.ID, pns, r.Application)
		note := pauseText(lang, noteParentFirst, r.Application)
		if children := s.children(ctx, p, c.ID, id, name); len(children) > 0 {
			note += ": " + strings.Join(children, ", ")
		}
		return id, note + "."
	case LevelUnknown:
		return "", pauseText(lang, noteParentUnknown, r.Application)
	}
	return "", ""
}

// appID is the id of the app ns/name in the cluster's snapshot (its name
// when it is not found there).
func (s *SyncPauses) appID(ctx context.Context, p Principal, clusterID, ns, name string) string {
	if _, snap, err := s.ArgoCD.snapshot(ctx, p, clusterID, false); err == nil {
		for _, a := range snap.Apps() {
			if a.Namespace == ns && a.Name == name {
				return a.ID
			}
		}
	}
	return name
}

// children are the Applications app parentID lists in its status, less
// the one being paused.
func (s *SyncPauses) children(ctx context.Context, p Principal, clusterID, parentID, except string) []string {
	_, snap, err := s.ArgoCD.snapshot(ctx, p, clusterID, false)
	if err != nil {
		return nil
	}
	parent, ok := snap.App(parentID)
	if !ok {
		return nil
	}
	var out []string
	for _, r := range parent.Resources {
		if r.Kind == "Application" && r.Group == "argoproj.io" && r.Name != except {
			out = append(out, r.Name)
		}
	}
	return out
}

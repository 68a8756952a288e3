package service

import (
	"encoding/json"
	"time"
)

// ArgoCDFromPayload reads a plan payload's `argocd` field whatever its
// shape: the payload is free-form JSON and clients have stored odd values.
// Non-array lists, rows that are not objects or have no name, and fields of
// the wrong type are dropped; the rest is kept. It returns nil when there
// is no usable field.
func ArgoCDFromPayload(payload json.RawMessage) *ArgoCDWarning {
	var doc map[string]any
	if json.Unmarshal(payload, &doc) != nil {
		return nil
	}
	m, ok := doc["argocd"].(map[string]any)
	if !ok {
		return nil
	}
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	boolean := func(m map[string]any, k string) bool { v, _ := m[k].(bool); return v }
	w := &ArgoCDWarning{Summary: str(m, "summary"), Warning: str(m, "warning"),
		Applications: []OwnershipApp{}, Resources: []OwnershipResource{}}
	if l := Level(str(m, "level")); l.Valid() {
		w.Level = l
	}
	if t, err := time.Parse(time.RFC3339Nano, str(m, "checked_at")); err == nil {
		w.CheckedAt = t
	}
	if rs, ok := m["recheck_skipped"].(map[string]any); ok && str(rs, "reason") != "" {
		w.RecheckSkipped = &RecheckSkipped{Reason: Reason(str(rs, "reason"))}
		w.RecheckSkipped.At, _ = time.Parse(time.RFC3339Nano, str(rs, "at"))
	}
	actions, _ := m["actions"].([]any)
	for _, a := range actions {
		if row, ok := a.(map[string]any); ok && str(row, "kind") == ActionPauseSync && str(row, "app") != "" {
			w.Actions = append(w.Actions, WarningAction{Kind: ActionPauseSync, App: str(row, "app"), ClusterID: str(row, "cluster_id")})
		}
	}
	apps, _ := m["applications"].([]any)
	for _, a := range apps {
		row, ok := a.(map[string]any)
		if !ok || str(row, "name") == "" {
			continue
		}
		// Plans stored before repo URLs were cleaned at parse time may hold credentials.
		app := OwnershipApp{Name: str(row, "name"), Namespace: str(row, "namespace"), RepoURL: StripRepoCredentials(str(row, "repo_url")),
			Path: str(row, "path"), TargetRevision: str(row, "target_revision"), AutoSync: boolean(row, "auto_sync"),
			SelfHeal: boolean(row, "self_heal"), Prune: boolean(row, "prune"), Paths: []string{}}
		paths, _ := row["paths"].([]any)
		for _, p := range paths {
			if s, ok := p.(string); ok {
				app.Paths = append(app.Paths, s)
			}
		}
		w.Applications = append(w.Applications, app)
	}
	resources, _ := m["resources"].([]any)
	for _, r := range resources {
		row, ok := r.(map[string]any)
		if !ok || str(row, "name") == "" || str(row, "kind") == "" {
			continue
		}
		res := OwnershipResource{Group: str(row, "group"), Kind: str(row, "kind"), Name: str(row, "name"),
			Namespace: str(row, "namespace"), Application: str(row, "application"), Tracking: str(row, "tracking"),
			Reason: str(row, "reason")}
		// Closed lists: a value outside them (a client's odd payload) is dropped.
		if b := str(row, "basis"); ValidBasis(b) {
			res.Basis = b
		}
		if c := str(row, "level_cause"); ValidCause(c) {
			res.LevelCause = c
		}
		if l := Level(str(row, "level")); l.Valid() {
			res.Level = l
		}
		res.Fields = fieldsFromPayload(row["fields"])
		hubs, _ := row["hub_cluster_ids"].([]any)
		for _, h := range hubs {
			if id, ok := h.(string); ok && id != "" {
				res.HubClusterIDs = append(res.HubClusterIDs, id)
			}
		}
		w.Resources = append(w.Resources, res)
	}
	return w
}

// fieldsFromPayload reads a resource row's fields whatever their shape:
// rows that are not objects or name no field are dropped; a masked row
// keeps no value.
func fieldsFromPayload(v any) []FieldPreview {
	rows, _ := v.([]any)
	var out []FieldPreview
	for _, r := range rows {
		row, ok := r.(map[string]any)
		field, _ := row["field"].(string)
		if !ok || field == "" {
			continue
		}
		f := FieldPreview{Field: field}
		f.Masked, _ = row["masked"].(bool)
		if !f.Masked {
			f.Live = rawValue(row, "live")
			f.Planned = rawValue(row, "planned")
		}
		f.Git = gitFromPayload(row["git"], f.Masked)
		out = append(out, f)
	}
	return out
}

// gitFromPayload reads a field's Git part whatever its shape (nil when it
// has no state); a masked field keeps no value.
func gitFromPayload(v any, masked bool) *GitValue {
	m, _ := v.(map[string]any)
	state, _ := m["state"].(string)
	switch state {
	case GitSet, GitUnset, GitPending, GitUnavailable:
	default:
		return nil
	}
	g := &GitValue{State: state}
	if r, ok := m["reason"].(string); ok {
		g.Reason = Reason(r)
	}
	if !masked {
		g.Value = rawValue(m, "value")
	}
	if src, ok := m["source"].(map[string]any); ok {
		str := func(k string) string { s, _ := src[k].(string); return s }
		line, _ := src["line"].(float64)
		g.Source = &GitSource{Revision: str("revision"), Path: str("path"), Line: int(line), Via: str("via"),
			Key: str("key"), Override: str("override")}
		if !masked {
			g.Source.KeyPlanned = rawValue(src, "key_planned")
		}
	}
	return g
}

// rawValue re-encodes a decoded JSON value (nil when absent).
func rawValue(row map[string]any, key string) json.RawMessage {
	v, ok := row[key]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

package argocd

import "github.com/kukie/gitops-server/service"

// resourceRows reads status.resources: rows without a name or kind are
// skipped.
func (d *ApplicationDecoder) resourceRows() []service.AppResource {
	w := &d.w
	w.array(func() {
		var r service.AppResource
		w.object(func(name []byte) {
			switch string(name) {
			case "group":
				s, _ := w.text()
				r.Group = d.in.shared(s)
			case "version":
				s, _ := w.text()
				r.Version = d.in.shared(s)
			case "kind":
				s, _ := w.text()
				r.Kind = d.in.shared(s)
			case "namespace":
				s, _ := w.text()
				r.Namespace = d.in.shared(s)
			case "name":
				s, _ := w.text()
				r.Name = d.in.local(s)
			case "status":
				s, _ := w.text()
				r.Status = d.in.shared(s)
			case "health":
				r.Health = d.resourceHealth()
			case "hook":
				r.Hook = w.boolean()
			case "requiresPruning":
				r.RequiresPruning = w.boolean()
			default:
				w.skip()
			}
		})
		if r.Name != "" && r.Kind != "" {
			d.resources = append(d.resources, r)
		}
	})
	if rows := exact(&d.resources); rows != nil {
		return rows
	}
	return []service.AppResource{}
}

// resourceHealth is a row's health.status when it is a non-empty string:
// since Argo CD 3.0 rows hold no health by default, which is not "Unknown".
func (d *ApplicationDecoder) resourceHealth() *string {
	w := &d.w
	var out *string
	w.object(func(name []byte) {
		if string(name) != "status" {
			w.skip()
			return
		}
		out = nil
		if s, ok := w.text(); ok && len(s) > 0 {
			out = d.in.healthOf(s)
		}
	})
	return out
}

// conditionRows reads status.conditions: conditions without a type are
// skipped.
func (d *ApplicationDecoder) conditionRows() []service.AppCondition {
	w := &d.w
	w.array(func() {
		var c service.AppCondition
		w.object(func(name []byte) {
			switch string(name) {
			case "type":
				s, _ := w.text()
				c.Type = d.in.shared(s)
			case "message":
				s, _ := w.text()
				c.Message = d.in.local(s)
			case "lastTransitionTime":
				c.LastTransitionTime = d.timestamp()
			default:
				w.skip()
			}
		})
		if c.Type != "" {
			d.conditions = append(d.conditions, c)
		}
	})
	if rows := exact(&d.conditions); rows != nil {
		return rows
	}
	return []service.AppCondition{}
}

// historyRows reads status.history: every object is an entry.
func (d *ApplicationDecoder) historyRows() []service.AppHistoryEntry {
	w := &d.w
	w.array(func() {
		e := service.AppHistoryEntry{Revisions: []string{}}
		if w.object(func(name []byte) {
			switch string(name) {
			case "id":
				e.ID = w.integer()
			case "revision":
				s, _ := w.text()
				e.Revision = d.in.shared(s)
			case "revisions":
				e.Revisions = w.strings(d.in.shared)
			case "deployedAt":
				e.DeployedAt = d.timestamp()
			case "initiatedBy":
				e.InitiatedBy = d.username()
			default:
				w.skip()
			}
		}) {
			d.history = append(d.history, e)
		}
	})
	if rows := exact(&d.history); rows != nil {
		return rows
	}
	return []service.AppHistoryEntry{}
}

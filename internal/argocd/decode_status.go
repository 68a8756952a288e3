package argocd

import (
	"time"

	"github.com/kukie/gitops-server/service"
)

type statusDoc struct {
	syncStatus, healthStatus, healthMessage string
	sync                                    service.AppSync
	operation                               *service.AppOperation
	reconciledAt                            *time.Time
	resources                               []service.AppResource
	conditions                              []service.AppCondition
	history                                 []service.AppHistoryEntry
}

func (d *ApplicationDecoder) status() statusDoc {
	w := &d.w
	var s statusDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "sync":
			s.syncStatus, s.sync = d.sync()
		case "health":
			s.healthStatus, s.healthMessage = d.health()
		case "operationState":
			s.operation = d.operation()
		case "reconciledAt":
			s.reconciledAt = d.timestamp()
		case "resources":
			s.resources = d.resourceRows()
		case "conditions":
			s.conditions = d.conditionRows()
		case "history":
			s.history = d.historyRows()
		default:
			w.skip()
		}
	})
	return s
}

// sync reads status.sync: the sync status, the revision(s) and the
// compared source(s) (upstream SyncStatus.ComparedTo in
// pkg/apis/application/v1alpha1/types.go).
func (d *ApplicationDecoder) sync() (string, service.AppSync) {
	w := &d.w
	var status string
	out := service.AppSync{Revisions: []string{}}
	w.object(func(name []byte) {
		switch string(name) {
		case "status":
			s, _ := w.text()
			status = d.in.shared(s)
		case "revision":
			s, _ := w.text()
			out.Revision = d.in.shared(s)
		case "revisions":
			out.Revisions = w.strings(d.in.shared)
		case "comparedTo":
			out.ComparedTo = d.comparedTo()
		default:
			w.skip()
		}
	})
	return status, out
}

// comparedTo reads status.sync.comparedTo's sources (when non-empty) or
// else its source (when a non-empty object); nil when neither.
func (d *ApplicationDecoder) comparedTo() []service.AppSource {
	w := &d.w
	var list sourceList
	var one []service.AppSource
	w.object(func(name []byte) {
		switch string(name) {
		case "sources":
			list = d.sourceList()
		case "source":
			one = nil
			if src, ok := d.sourceValue(); ok && src.members > 0 {
				one = []service.AppSource{src.AppSource}
			}
		default:
			w.skip()
		}
	})
	if list.n > 0 {
		return list.sources
	}
	return one
}

func (d *ApplicationDecoder) health() (status, message string) {
	w := &d.w
	w.object(func(name []byte) {
		switch string(name) {
		case "status":
			s, _ := w.text()
			status = d.in.shared(s)
		case "message":
			s, _ := w.text()
			message = d.in.local(s)
		default:
			w.skip()
		}
	})
	return status, message
}

// operation reads status.operationState: nil unless a non-empty object.
func (d *ApplicationDecoder) operation() *service.AppOperation {
	w := &d.w
	var op service.AppOperation
	members := 0
	w.object(func(name []byte) {
		members++
		switch string(name) {
		case "phase":
			s, _ := w.text()
			op.Phase = d.in.shared(s)
		case "message":
			s, _ := w.text()
			op.Message = d.in.shared(s)
		case "startedAt":
			op.StartedAt = d.timestamp()
		case "finishedAt":
			op.FinishedAt = d.timestamp()
		case "operation":
			op.InitiatedBy, op.Automated = d.initiatedBy("initiatedBy")
		default:
			w.skip()
		}
	})
	if members == 0 {
		return nil
	}
	return &op
}

// initiatedBy reads an object's member key holding an initiatedBy
// (username and automated), skipping the rest of the object.
func (d *ApplicationDecoder) initiatedBy(key string) (username string, automated bool) {
	w := &d.w
	w.object(func(name []byte) {
		if string(name) != key {
			w.skip()
			return
		}
		username, automated = "", false
		w.object(func(name []byte) {
			switch string(name) {
			case "username":
				s, _ := w.text()
				username = d.in.shared(s)
			case "automated":
				automated = w.boolean()
			default:
				w.skip()
			}
		})
	})
	return username, automated
}

// username reads an initiatedBy object's username.
func (d *ApplicationDecoder) username() string {
	w := &d.w
	var out string
	w.object(func(name []byte) {
		if string(name) != "username" {
			w.skip()
			return
		}
		s, _ := w.text()
		out = d.in.shared(s)
	})
	return out
}

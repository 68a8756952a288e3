package argocd

import (
	"bytes"
	"io"
	"slices"
	"time"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kukie/gitops-server/service"
)

// ApplicationDecoder reads Applications from their JSON (the items of a
// list response) straight into service.Application: no map of the whole
// object is built, and only the fields Kukie serves are kept. Strings are
// shared across the apps it reads (and, for values that repeat across
// clusters, across reads; see Strings), so use one decoder per cluster
// read. It is not safe for concurrent use.
type ApplicationDecoder struct {
	controlNamespace string
	w                walker // the Application
	sub              walker // a source object, read while w holds its bytes
	in               *interner
	// Row buffers, reused: each app gets exact-size copies.
	resources  []service.AppResource
	conditions []service.AppCondition
	history    []service.AppHistoryEntry
}

// NewApplicationDecoder returns a decoder for the Applications of a cluster
// whose Argo CD lives in controlNamespace (which decides the apps' ids).
// shared keeps the strings apps repeat across clusters canonical after the
// read (nil: only during it).
func NewApplicationDecoder(controlNamespace string, shared *Strings) *ApplicationDecoder {
	return &ApplicationDecoder{controlNamespace: controlNamespace, in: newInterner(shared)}
}

// DecodeApplication reads one Application from its JSON; see
// ApplicationDecoder.Decode.
func DecodeApplication(raw []byte, controlNamespace string) (service.Application, bool) {
	return NewApplicationDecoder(controlNamespace, nil).Decode(raw)
}

// Decode reads one Application from its JSON. It reports false when raw is
// not a JSON object with a metadata.name; a field of an unexpected type
// reads as absent and spoils nothing else. Nothing of raw is retained.
func (d *ApplicationDecoder) Decode(raw []byte) (service.Application, bool) {
	defer d.in.flush()
	w := &d.w
	w.reset(raw)
	var meta metaDoc
	var spec specDoc
	var status statusDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "metadata":
			meta = d.meta()
		case "spec":
			spec = d.spec()
		case "status":
			status = d.status()
		default:
			w.skip()
		}
	})
	if w.err != nil || meta.name == "" {
		return service.Application{}, false
	}
	if _, err := w.dec.ReadToken(); err != io.EOF {
		return service.Application{}, false // trailing data: not one JSON value
	}
	a := service.Application{
		Name:          meta.name,
		Namespace:     meta.namespace,
		Project:       spec.project,
		Sources:       spec.chosenSources(),
		Destination:   spec.destination,
		SyncStatus:    status.syncStatus,
		HealthStatus:  status.healthStatus,
		HealthMessage: status.healthMessage,
		Operation:     status.operation,
		ReconciledAt:  status.reconciledAt,
		Resources:     orEmpty(status.resources),
		Sync:          status.sync,
		Conditions:    orEmpty(status.conditions),
		History:       orEmpty(status.history),
	}
	if a.Sync.Revisions == nil {
		a.Sync.Revisions = []string{}
	}
	if slices.EqualFunc(a.Sync.ComparedTo, a.Sources, equalSource) && len(a.Sources) > 0 {
		// Usually so; the two are only read, so they share one array.
		a.Sync.ComparedTo = a.Sources
	}
	a.IgnoreDifferences = spec.ignore
	a.HydratedSource = spec.hydrated
	a.RespectIgnoreDifferences = spec.policy.respect
	a.AutoSync, a.SelfHeal, a.Prune = spec.policy.levels()
	a.SkipReconcile, a.ManifestGeneratePaths = meta.skipReconcile, meta.generatePaths
	if a.SelfHeal && a.Operation.Failed() {
		// Rare (a failed sync of a self-healing app), and the comparison
		// covers whole source objects: read as maps, as Argo CD compares
		// its typed structs.
		a.SelfHealPaused = pausedByFailedSync(raw)
	}
	finish(&a, d.controlNamespace)
	return a, true
}

// equalSource compares two sources of one read, whose specs the interner
// shares.
func equalSource(a, b service.AppSource) bool {
	return a.RepoURL == b.RepoURL && a.Path == b.Path && a.Chart == b.Chart &&
		a.TargetRevision == b.TargetRevision && a.Ref == b.Ref && bytes.Equal(a.Spec, b.Spec)
}

// timestamp reads an RFC 3339 time; anything else is nil.
func (d *ApplicationDecoder) timestamp() *time.Time {
	s, ok := d.w.text()
	if !ok {
		return nil
	}
	return d.in.time(s)
}

// pausedByFailedSync is lastSyncAttemptFailed over the object read as maps.
func pausedByFailedSync(raw []byte) bool {
	var obj map[string]any
	// A type error (a number out of range) leaves the rest of the map read.
	_ = utiljson.Unmarshal(raw, &obj)
	return lastSyncAttemptFailed(mapAt(obj, "spec"), mapAt(obj, "status"))
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// exact returns a copy of *buf that holds no spare capacity and empties
// *buf for the next app.
func exact[T any](buf *[]T) []T {
	if len(*buf) == 0 {
		return nil
	}
	out := make([]T, len(*buf))
	copy(out, *buf)
	clear(*buf)
	*buf = (*buf)[:0]
	return out
}

type metaDoc struct {
	name, namespace              string
	skipReconcile, generatePaths bool
}

func (d *ApplicationDecoder) meta() metaDoc {
	w := &d.w
	var m metaDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "name":
			s, _ := w.text()
			m.name = d.in.local(s)
		case "namespace":
			s, _ := w.text()
			m.namespace = d.in.shared(s)
		case "annotations":
			m.skipReconcile, m.generatePaths = d.annotations()
		default:
			w.skip()
		}
	})
	return m
}

// annotations reads the two annotations that change what Argo CD does
// with an app (see AnnotationSkipReconcile).
func (d *ApplicationDecoder) annotations() (skip, generatePaths bool) {
	w := &d.w
	w.object(func(name []byte) {
		switch string(name) {
		case AnnotationSkipReconcile:
			s, _ := w.text()
			skip = skipReconcile(string(s))
		case AnnotationManifestGeneratePaths:
			s, _ := w.text()
			generatePaths = len(s) > 0
		default:
			w.skip()
		}
	})
	return skip, generatePaths
}

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

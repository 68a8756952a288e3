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

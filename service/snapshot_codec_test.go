package service

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fullApp sets every field of Application (checked by
// TestCodecFixtureSetsEveryField), so a field the shared encoding drops
// fails the round trip.
func fullApp() Application {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	health := "Healthy"
	src := AppSource{RepoURL: "https://git.example/r.git", Path: "apps/web", Chart: "web", TargetRevision: "main", Ref: "values",
		Spec: json.RawMessage(`{"repoURL":"https://git.example/r.git","path":"apps/web"}`)}
	return Application{
		ID: "team_web", Name: "web", Namespace: "team", Project: "default", Sources: []AppSource{src},
		Destination: AppDestination{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "web"},
		SyncStatus:  "OutOfSync", HealthStatus: "Degraded", HealthMessage: "pods crash", AutoSync: true, SelfHeal: true, Prune: true,
		Operation:    &AppOperation{Phase: "Failed", Message: "boom", StartedAt: &at, FinishedAt: &at, InitiatedBy: "alice", Automated: true},
		ReconciledAt: &at, Problems: []AppProblem{{Reason: ProblemDegraded, Message: "pods crash"}},
		Level: LevelSelfHeal, LevelReason: "self-heal on",
		Resources: []AppResource{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web", Status: "OutOfSync",
			Health: &health, Hook: true, RequiresPruning: true, RowLevel: LevelSelfHeal, RowCause: CausePolicy, RowReason: "self-heal on"}},
		Conditions:               []AppCondition{{Type: "SyncError", Message: "x", LastTransitionTime: &at}},
		History:                  []AppHistoryEntry{{ID: 3, Revision: "abc", Revisions: []string{"abc", "def"}, DeployedAt: &at, InitiatedBy: "bob"}},
		IgnoreDifferences:        []IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Namespace: "web", JSONPointers: []string{"/spec/replicas"}, HasUnevaluated: true}},
		RespectIgnoreDifferences: true,
		Sync:                     AppSync{Revision: "abc", Revisions: []string{"abc"}, ComparedTo: []AppSource{src}},
		HydratedSource:           &src, SkipReconcile: true, ManifestGeneratePaths: true, SelfHealPaused: true,
	}
}

func TestCodecFixtureSetsEveryField(t *testing.T) {
	v := reflect.ValueOf(fullApp())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("fullApp leaves Application.%s unset: set it, and check the shared encoding carries it", v.Type().Field(i).Name)
		}
	}
}

// TestSnapshotCodecRoundTrip: what another replica decodes is the
// snapshot the reader built — every field, the same list bytes and ETag,
// the same settings — and an empty app keeps its [] lists.
func TestSnapshotCodecRoundTrip(t *testing.T) {
	empty := Application{ID: "bare", Name: "bare", Sources: []AppSource{}, Problems: []AppProblem{}, History: []AppHistoryEntry{},
		Resources: []AppResource{}, Conditions: []AppCondition{}}
	settings := ArgoCDSettings{InstallationID: "i1", InstanceLabelKey: "team/app", TrackingMethod: "annotation",
		IgnoreRules: []IgnoreRule{{Kind: "Secret", JSONPointers: []string{"/data"}}}, KustomizeBuildOptions: "--enable-helm", Read: true, Note: "n"}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	orig := newSnapshot(AppRead{Apps: []Application{fullApp(), empty}, OnlyNamespace: "argocd", Settings: settings}, nil, at)
	enc, hash, err := EncodeSnapshot(orig)
	if err != nil {
		t.Fatal(err)
	}
	read, failure, err := decodeSnapshotRecord(enc)
	if err != nil || failure != nil {
		t.Fatalf("decode: %v, failure %v", err, failure)
	}
	got := newSnapshot(read, nil, at)
	if diff := cmp.Diff(orig.Apps(), got.Apps()); diff != "" {
		t.Errorf("apps after the round trip (-want +got):\n%s", diff)
	}
	if !bytes.Equal(orig.ListJSON(), got.ListJSON()) || orig.ContentHash != got.ContentHash {
		t.Errorf("list bytes differ after the round trip:\n%s\n%s", orig.ListJSON(), got.ListJSON())
	}
	// A snapshot that is no longer hot keeps only its packed apps: decoded
	// again, they and the list bytes are what they were.
	cold := newSnapshot(AppRead{Apps: []Application{fullApp(), empty}, OnlyNamespace: "argocd", Settings: settings}, nil, at)
	cold.pack()
	cold.decoded.Store(nil)
	if diff := cmp.Diff(orig.Apps(), cold.Apps()); diff != "" {
		t.Errorf("apps after unpacking (-want +got):\n%s", diff)
	}
	cold.decoded.Store(nil)
	if !bytes.Equal(orig.ListJSON(), cold.ListJSON()) {
		t.Errorf("list bytes differ after unpacking:\n%s\n%s", orig.ListJSON(), cold.ListJSON())
	}
	if diff := cmp.Diff(orig.Settings, got.Settings); diff != "" || got.OnlyNamespace != "argocd" {
		t.Errorf("settings (-want +got):\n%s (only namespace %q)", diff, got.OnlyNamespace)
	}
	if _, again, _ := EncodeSnapshot(got); again != hash {
		t.Error("the same snapshot encodes to another hash: unchanged reads would rewrite the row")
	}

	// A failure crosses as its class and message, never the wrapped cause.
	failed := newSnapshot(AppRead{Settings: settings}, WrapError(EUPSTREAM, "The cluster cannot be reached.",
		&Error{Code: EUPSTREAM, Reason: "cluster_unreachable", Message: "dial tcp 10.0.0.1:443"}), at)
	failed.Err = &Error{Code: EUPSTREAM, Reason: "cluster_unreachable", Message: "The cluster cannot be reached.", Err: failed.Err}
	enc, _, err = EncodeSnapshot(failed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte("10.0.0.1")) {
		t.Error("the shared encoding holds the wrapped client error")
	}
	_, failure, err = decodeSnapshotRecord(enc)
	if err != nil || ErrorReason(failure) != "cluster_unreachable" || ErrorCode(failure) != EUPSTREAM ||
		ErrorMessage(failure) != "The cluster cannot be reached." {
		t.Errorf("failure after the round trip: %v (%v)", failure, err)
	}
	if _, _, err := decodeSnapshotRecord([]byte("not gob")); err == nil {
		t.Error("garbage decoded without an error")
	}
}

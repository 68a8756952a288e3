package argocd

import (
	"testing"

	"github.com/kukie/gitops-server/service"
)

// selfHealApp is an auto-sync, self-heal app with the given spec source(s)
// and status (JSON members).
func selfHealApp(sources, status string) string {
	return `{"metadata":{"name":"web","namespace":"argocd"},"spec":{` + sources +
		`,"syncPolicy":{"automated":{"selfHeal":true}}},"status":{` + status + `}}`
}

func TestSelfHealPaused(t *testing.T) {
	const one = `"source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}`
	const many = `"sources":[{"repoURL":"https://g/r","path":"web"},{"repoURL":"https://g/v","ref":"values"}]`
	const hydrated = `"sourceHydrator":{"drySource":{"repoURL":"https://g/dry","path":"web","targetRevision":"main"},
		"syncSource":{"targetBranch":"env/prod","path":"prod/web"}}`
	cases := map[string]struct {
		sources, status string
		paused          bool
	}{
		"NoOperation": {one, `"sync":{"revision":"abc"}`, false},
		"FailedSameRevisionAndSource": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, true},
		"ErrorSameRevisionAndSource": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Error",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, true},
		"ManualFailedSyncCountsToo": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"operation":{"initiatedBy":{"username":"bob"}},
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, true},
		"SucceededIsNotPaused": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Succeeded",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, false},
		"RunningIsNotPaused":   {one, `"operationState":{"phase":"Running"}`, false},
		"FailedNoSyncResult":   {one, `"operationState":{"phase":"Failed"}`, true},
		"FailedNullSyncResult": {one, `"operationState":{"phase":"Error","syncResult":null}`, true},
		"NewRevision": {one, `"sync":{"revision":"def"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, false},
		"SourceChanged": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"v2"}}}`, false},
		"EmptyFieldsEqualAbsent": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main","chart":"","helm":null}}}`, true},
		"MultiSourceSame": {many, `"sync":{"revisions":["a","b"]},"operationState":{"phase":"Failed",
			"syncResult":{"revisions":["a","b"],"sources":[{"repoURL":"https://g/r","path":"web"},{"repoURL":"https://g/v","ref":"values"}]}}`, true},
		"MultiSourceNewRevision": {many, `"sync":{"revisions":["a","c"]},"operationState":{"phase":"Failed",
			"syncResult":{"revisions":["a","b"],"sources":[{"repoURL":"https://g/r","path":"web"},{"repoURL":"https://g/v","ref":"values"}]}}`, false},
		"MultiSourceSingleRevisionFieldIgnored": {many, `"sync":{"revision":"x","revisions":["a","b"]},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"y","revisions":["a","b"],"sources":[{"repoURL":"https://g/r","path":"web"},{"repoURL":"https://g/v","ref":"values"}]}}`, true},
		"MultiSourceSourcesChanged": {many, `"sync":{"revisions":["a","b"]},"operationState":{"phase":"Failed",
			"syncResult":{"revisions":["a","b"],"sources":[{"repoURL":"https://g/r","path":"web"}]}}`, false},
		"HydratorComparesSyncSource": {hydrated, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/dry","path":"prod/web","targetRevision":"env/prod"}}}`, true},
		"HydratorDrySourceIsNotSyncSource": {hydrated, `"sync":{"revision":"abc"},"operationState":{"phase":"Failed",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/dry","path":"web","targetRevision":"main"}}}`, false},
		"RevisionWrongType": {one, `"sync":{"revision":7},"operationState":{"phase":"Failed",
			"syncResult":{"revision":7,"source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, false},
		"RevisionsWrongType": {many, `"sync":{"revisions":["a",1]},"operationState":{"phase":"Failed",
			"syncResult":{"revisions":["a",1],"sources":[{"repoURL":"https://g/r","path":"web"},{"repoURL":"https://g/v","ref":"values"}]}}`, false},
		"SyncResultWrongType":     {one, `"operationState":{"phase":"Failed","syncResult":"x"}`, false},
		"PhaseWrongType":          {one, `"operationState":{"phase":["Failed"]}`, false},
		"OperationStateWrongType": {one, `"operationState":"Failed"`, false},
		"MessageTextIsNotRead": {one, `"sync":{"revision":"abc"},"operationState":{"phase":"Succeeded","message":"Failed last sync attempt",
			"syncResult":{"revision":"abc","source":{"repoURL":"https://g/r","path":"web","targetRevision":"main"}}}`, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := parse(t, selfHealApp(c.sources, c.status))
			if !ok {
				t.Fatal("not parsed")
			}
			if a.SelfHealPaused != c.paused {
				t.Fatalf("SelfHealPaused = %v, want %v", a.SelfHealPaused, c.paused)
			}
			want := service.LevelSelfHeal
			if c.paused {
				want = service.LevelAutoSync
			}
			if a.Level != want {
				t.Errorf("Level = %s, want %s (%s)", a.Level, want, a.LevelReason)
			}
		})
	}
}

// TestSelfHealPausedOnlyForSelfHealApps: without self-heal there is nothing
// to pause (auto-sync alone waits for a new commit anyway).
func TestSelfHealPausedOnlyForSelfHealApps(t *testing.T) {
	a, _ := parse(t, `{"metadata":{"name":"web","namespace":"argocd"},"spec":{"syncPolicy":{"automated":{}}},
		"status":{"operationState":{"phase":"Failed"}}}`)
	if a.SelfHealPaused || a.Level != service.LevelAutoSync {
		t.Errorf("auto-sync app: paused %v, level %s", a.SelfHealPaused, a.Level)
	}
}

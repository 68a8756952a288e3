package argocd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func parse(t *testing.T, doc string) (service.Application, bool) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return ParseApplication(obj, "argocd")
}

func TestSyncPolicy(t *testing.T) {
	cases := map[string]struct {
		spec                      string
		autoSync, selfHeal, prune bool
	}{
		"Absent":            {`{}`, false, false, false},
		"Null":              {`{"syncPolicy":{"automated":null}}`, false, false, false},
		"Empty":             {`{"syncPolicy":{"automated":{}}}`, true, false, false},
		"SelfHealPrune":     {`{"syncPolicy":{"automated":{"selfHeal":true,"prune":true}}}`, true, true, true},
		"EnabledTrue":       {`{"syncPolicy":{"automated":{"enabled":true,"selfHeal":true}}}`, true, true, false},
		"EnabledFalse":      {`{"syncPolicy":{"automated":{"enabled":false,"selfHeal":true,"prune":true}}}`, false, false, false},
		"EnabledWrongType":  {`{"syncPolicy":{"automated":{"enabled":"yes","selfHeal":true}}}`, false, false, false},
		"AutomatedString":   {`{"syncPolicy":{"automated":"yes"}}`, false, false, false},
		"SelfHealWrongType": {`{"syncPolicy":{"automated":{"selfHeal":"true"}}}`, true, false, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var spec map[string]any
			if err := json.Unmarshal([]byte(c.spec), &spec); err != nil {
				t.Fatal(err)
			}
			a, s, p := syncPolicy(spec)
			if a != c.autoSync || s != c.selfHeal || p != c.prune {
				t.Errorf("SyncPolicy = %v %v %v, want %v %v %v", a, s, p, c.autoSync, c.selfHeal, c.prune)
			}
		})
	}
}

func TestParseApplication(t *testing.T) {
	a, ok := parse(t, `{"metadata":{"name":"payments","namespace":"team-apps"},
		"spec":{"project":"p","sources":[{"repoURL":"https://charts.example","chart":"redis","targetRevision":"1.0"},"junk",{"repoURL":"git@github.com:o/r.git","path":"values"}],
		  "destination":{"server":"https://kubernetes.default.svc","namespace":"pay"},"syncPolicy":{"automated":{"selfHeal":true}}},
		"status":{"sync":{"status":"OutOfSync"},"health":{"status":"Degraded","message":"boom"},
		  "operationState":{"phase":"Failed","message":"apply failed","startedAt":"2026-11-30T01:00:00Z","operation":{"initiatedBy":{"username":"bob"}}},
		  "resources":[{"kind":"Deployment","name":"api","status":"OutOfSync","health":{"status":"Degraded"}},{"kind":"Service"},"x"],
		  "conditions":[{"type":"ComparisonError","message":"m"},{"type":"SharedResourceWarning","message":"w"},{"message":"untyped"}],
		  "history":[{"id":3,"revision":"abc","revisions":["a","b",1],"deployedAt":"2026-11-30T00:00:00Z"}]}}`)
	if !ok {
		t.Fatal("not parsed")
	}
	if a.ID != "team-apps_payments" || len(a.Sources) != 2 || a.Sources[0].Chart != "redis" || !a.AutoSync || !a.SelfHeal {
		t.Errorf("parsed = %+v", a)
	}
	if len(a.Resources) != 1 || len(a.Conditions) != 2 || len(a.History) != 1 || a.History[0].ID != 3 ||
		len(a.History[0].Revisions) != 2 || a.Operation == nil || a.Operation.InitiatedBy != "bob" || a.Operation.StartedAt == nil {
		t.Errorf("status parts = %+v", a)
	}
	var reasons []string
	for _, p := range a.Problems {
		reasons = append(reasons, p.Reason)
	}
	want := []string{"operation_failed", "error_condition", "degraded", "out_of_sync"}
	if len(reasons) != len(want) {
		t.Fatalf("problems = %v, want %v", reasons, want)
	}
	for i := range want {
		if reasons[i] != want[i] {
			t.Errorf("problems = %v, want %v", reasons, want)
		}
	}
}

func TestParseTolerates(t *testing.T) {
	for name, doc := range map[string]string{
		"NoStatus":       `{"metadata":{"name":"a","namespace":"argocd"}}`,
		"WrongTypes":     `{"metadata":{"name":"a","namespace":"argocd"},"spec":[1],"status":{"sync":"x","health":7,"resources":"no","conditions":{},"history":3,"operationState":[]}}`,
		"NullEveryhwere": `{"metadata":{"name":"a","namespace":"argocd"},"spec":null,"status":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			a, ok := parse(t, doc)
			if !ok || a.ID != "a" || a.SyncStatus != "Unknown" || a.HealthStatus != "Unknown" {
				t.Errorf("parsed = %+v, %v", a, ok)
			}
		})
	}
	if _, ok := parse(t, `{"metadata":{"namespace":"argocd"}}`); ok {
		t.Error("an object without a name was accepted")
	}
}

// FuzzParseApplication: no input panics, and every parsed app has an id.
func FuzzParseApplication(f *testing.F) {
	f.Add(`{"metadata":{"name":"a","namespace":"x"},"spec":{"syncPolicy":{"automated":{"enabled":false}}},"status":{"resources":[{"name":"n","kind":"k"}]}}`)
	f.Add(`{"metadata":{"name":"a"},"status":{"history":[{"id":1.5}],"operationState":{"phase":"Error"}}}`)
	f.Add(`{"metadata":{"name":"a","annotations":{"argocd.argoproj.io/skip-reconcile":"t","argocd.argoproj.io/manifest-generate-paths":"."}}}`)
	f.Add(selfHealApp(`"source":{"repoURL":"r","path":"p"}`, `"sync":{"revision":"x"},"operationState":{"phase":"Failed","syncResult":{"revision":"x","source":{"repoURL":"r","path":"p","chart":""}}}`))
	f.Add(selfHealApp(`"sources":[{"repoURL":"r"}]`, `"sync":{"revisions":["x"]},"operationState":{"phase":"Error","syncResult":{"revisions":["x"],"sources":[{"repoURL":"r"}]}}`))
	f.Add(selfHealApp(`"sourceHydrator":{"drySource":{"repoURL":"r","path":"p"},"syncSource":{"path":"q","targetBranch":"b"}}`, `"operationState":{"phase":"Failed","syncResult":{"source":{"repoURL":"r","path":"q","targetRevision":"b"}}}`))
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > maxFuzzInput {
			return
		}
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		a, ok := ParseApplication(obj, "argocd")
		if ok && (a.ID == "" || a.Problems == nil || a.Sources == nil) {
			t.Fatalf("parsed app missing id or slices: %+v", a)
		}
		if ok && (!a.Level.Valid() || a.LevelReason == "") {
			t.Fatalf("parsed app without a level: %+v", a)
		}
		if a.SelfHealPaused && (!a.SelfHeal || a.Operation == nil || !a.Operation.Failed()) {
			t.Fatalf("self-heal paused without a failed operation: %+v", a)
		}
		if a.SkipReconcile && a.Level != service.LevelNotReverted {
			t.Fatalf("skip-reconcile app at level %s", a.Level)
		}
	})
}

func TestParseSourcesStripsCredentials(t *testing.T) {
	a, ok := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"spec":{"sources":[
		{"repoURL":"https://ghp_abc123@github.com/o/r.git","path":"p"},
		{"repoURL":"https://user:s3cret@charts.example.com","chart":"c"},
		{"repoURL":"ghp_x@github.com:o/r.git"},
		{"repoURL":"ssh://git:s3cret@github.com/o/r"},
		{"repoURL":"oci://robot:s3cret@registry.example.com/charts"},
		{"repoURL":"git@github.com:o/clean.git"},
		{"repoURL":"https://github.com/o/clean"}]}}`)
	if !ok {
		t.Fatal("not parsed")
	}
	want := []string{"https://github.com/o/r.git", "https://charts.example.com", "git@github.com:o/r.git",
		"ssh://git@github.com/o/r", "oci://registry.example.com/charts", "git@github.com:o/clean.git",
		"https://github.com/o/clean"}
	if len(a.Sources) != len(want) {
		t.Fatalf("sources = %+v", a.Sources)
	}
	for i, w := range want {
		if a.Sources[i].RepoURL != w {
			t.Errorf("sources[%d].repo_url = %q, want %q", i, a.Sources[i].RepoURL, w)
		}
	}
	single, _ := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"spec":{"source":{"repoURL":"https://glpat-abc@gitlab.com/o/r"}}}`)
	if len(single.Sources) != 1 || single.Sources[0].RepoURL != "https://gitlab.com/o/r" {
		t.Errorf("single source = %+v", single.Sources)
	}
}

func TestParseAnnotations(t *testing.T) {
	cases := map[string]struct {
		annotations         string
		skip, generatePaths bool
		level               service.Level
	}{
		"None":                 {`{}`, false, false, service.LevelSelfHeal},
		"SkipTrue":             {`{"argocd.argoproj.io/skip-reconcile":"true"}`, true, false, service.LevelNotReverted},
		"SkipParseBoolOne":     {`{"argocd.argoproj.io/skip-reconcile":"1"}`, true, false, service.LevelNotReverted},
		"SkipParseBoolT":       {`{"argocd.argoproj.io/skip-reconcile":"TRUE"}`, true, false, service.LevelNotReverted},
		"SkipFalse":            {`{"argocd.argoproj.io/skip-reconcile":"false"}`, false, false, service.LevelSelfHeal},
		"SkipUnparsable":       {`{"argocd.argoproj.io/skip-reconcile":"yes"}`, false, false, service.LevelSelfHeal},
		"SkipWrongType":        {`{"argocd.argoproj.io/skip-reconcile":true}`, false, false, service.LevelSelfHeal},
		"GeneratePaths":        {`{"argocd.argoproj.io/manifest-generate-paths":"."}`, false, true, service.LevelSelfHeal},
		"GeneratePathsEmpty":   {`{"argocd.argoproj.io/manifest-generate-paths":""}`, false, false, service.LevelSelfHeal},
		"AnnotationsWrongType": {`[1]`, false, false, service.LevelSelfHeal},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := parse(t, `{"metadata":{"name":"a","namespace":"argocd","annotations":`+c.annotations+`},
				"spec":{"syncPolicy":{"automated":{"selfHeal":true}}}}`)
			if !ok || a.SkipReconcile != c.skip || a.ManifestGeneratePaths != c.generatePaths || a.Level != c.level {
				t.Errorf("skip %v paths %v level %s (%q)", a.SkipReconcile, a.ManifestGeneratePaths, a.Level, a.LevelReason)
			}
		})
	}
}

func TestParseSourceHydrator(t *testing.T) {
	a, ok := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"spec":{
		"source":{"repoURL":"https://g/ignored"},
		"sourceHydrator":{"drySource":{"repoURL":"https://user:tok@github.com/o/dry","path":"apps/web","targetRevision":"HEAD"},
		  "syncSource":{"targetBranch":"env/prod","path":"prod/web"}}}}`)
	want := []service.AppSource{{RepoURL: "https://github.com/o/dry", Path: "apps/web", TargetRevision: "HEAD",
		Spec: json.RawMessage(`{"path":"apps/web","repoURL":"https://github.com/o/dry","targetRevision":"HEAD"}`)}}
	if !ok || !reflect.DeepEqual(a.Sources, want) {
		t.Errorf("sources = %+v, want %+v", a.Sources, want)
	}
	// The hydrated branch is what the repo tab renders, as a plain directory.
	if h := a.HydratedSource; h == nil || h.RepoURL != "https://github.com/o/dry" || h.Path != "prod/web" ||
		h.TargetRevision != "env/prod" || strings.Contains(string(h.Spec), "tok") {
		t.Errorf("hydrated source = %+v", h)
	}
	b, _ := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"spec":{"source":{"repoURL":"https://g/r"},"sourceHydrator":"x"}}`)
	if len(b.Sources) != 1 || b.Sources[0].RepoURL != "https://g/r" {
		t.Errorf("malformed hydrator: sources = %+v", b.Sources)
	}
}

func TestParseResourceHealthAbsent(t *testing.T) {
	a, _ := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"status":{"resources":[
		{"kind":"Deployment","name":"web"},{"kind":"Service","name":"web","health":{"status":"Healthy"}}]}}`)
	if len(a.Resources) != 2 || a.Resources[0].Health != nil || a.Resources[1].Health == nil || *a.Resources[1].Health != "Healthy" {
		t.Errorf("resources = %+v", a.Resources)
	}
}

// status.sync's revision(s) and compared source(s) are what the repo tab
// renders; credentials never survive into a source's spec.
func TestParseSync(t *testing.T) {
	a, ok := parse(t, `{"metadata":{"name":"a","namespace":"argocd"},"spec":{
		"source":{"repoURL":"https://u:ghp_tok@github.com/o/r","path":"apps/web","helm":{"valueFiles":["v.yaml"]}}},
		"status":{"sync":{"status":"Synced","revision":"abc123",
		  "comparedTo":{"source":{"repoURL":"https://u:ghp_tok@github.com/o/r","path":"apps/web","targetRevision":"main"}}}}}`)
	if !ok || a.Sync.Revision != "abc123" || len(a.Sync.ComparedTo) != 1 || a.Sync.ComparedTo[0].TargetRevision != "main" {
		t.Fatalf("sync = %+v", a.Sync)
	}
	for _, spec := range []json.RawMessage{a.Sync.ComparedTo[0].Spec, a.Sources[0].Spec} {
		if strings.Contains(string(spec), "ghp_tok") || !strings.Contains(string(spec), "github.com/o/r") {
			t.Errorf("spec %s", spec)
		}
	}
	if !strings.Contains(string(a.Sources[0].Spec), `"valueFiles":["v.yaml"]`) {
		t.Errorf("source spec lost its helm settings: %s", a.Sources[0].Spec)
	}
	m, _ := parse(t, `{"metadata":{"name":"m","namespace":"argocd"},"spec":{"sources":[{"repoURL":"https://g/r"},{"repoURL":"https://g/v","ref":"values"}]},
		"status":{"sync":{"revisions":["r1","r2"],"comparedTo":{"sources":[{"repoURL":"https://g/r"},{"repoURL":"https://g/v","ref":"values"}]}}}}`)
	if len(m.Sync.Revisions) != 2 || len(m.Sync.ComparedTo) != 2 || m.Sync.ComparedTo[1].Ref != "values" || m.Sources[1].Ref != "values" {
		t.Errorf("multi-source sync = %+v sources %+v", m.Sync, m.Sources)
	}
}

// syncPolicy reads spec.syncPolicy.automated (spec in unstructured form)
// through the decoder: auto-sync is on when automated is present and
// enabled is absent or true (enabled exists since Argo CD 3.1); selfHeal and
// prune count only with auto-sync on.
func syncPolicy(spec map[string]any) (autoSync, selfHeal, prune bool) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return false, false, false
	}
	d := NewApplicationDecoder("", nil)
	d.w.reset(raw)
	return d.spec().policy.levels()
}

package argocd

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kukie/gitops-server/internal/testkit/argocdtest"
	"github.com/kukie/gitops-server/service"
)

// fleet returns n fixture apps' JSON with rows status.resources rows each.
func fleet(n, rows int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = argocdtest.ApplicationJSON(i, rows)
	}
	return out
}

// retained decodes docs with one decoder (as one cluster read does), keeps
// the apps and returns the heap they hold, per app, and the apps.
func retained(tb testing.TB, docs [][]byte) (float64, []service.Application) {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	table := NewStrings(time.Now, time.Hour)
	dec := NewApplicationDecoder("argocd", table)
	apps := make([]service.Application, 0, len(docs))
	for _, doc := range docs {
		a, ok := dec.Decode(doc)
		if !ok {
			tb.Fatal("fixture app not decoded")
		}
		apps = append(apps, a)
	}
	dec = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(table)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(docs)), apps
}

// BenchmarkRetainedPerApp reports the heap a decoded app holds ("B/app",
// the apps slice included) and the size of the list response JSON the
// snapshot keeps beside them ("json-B/app"), for 3 and 23
// status.resources rows: the difference over 20 is the cost of a row.
func BenchmarkRetainedPerApp(b *testing.B) {
	for _, rows := range []int{3, 23} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			docs := fleet(1000, rows)
			var perApp float64
			var apps []service.Application
			for b.Loop() {
				perApp, apps = retained(b, docs)
			}
			listJSON, err := json.Marshal(apps)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(perApp, "B/app")
			b.ReportMetric(float64(len(listJSON))/float64(len(apps)), "json-B/app")
		})
	}
}

// BenchmarkDecodeApplication is the CPU cost of decoding one fixture app
// (3 rows) with a cluster read's decoder.
func BenchmarkDecodeApplication(b *testing.B) {
	docs := fleet(500, 3)
	b.SetBytes(int64(len(docs[0])))
	dec := NewApplicationDecoder("argocd", nil)
	i := 0
	for b.Loop() {
		if _, ok := dec.Decode(docs[i%len(docs)]); !ok {
			b.Fatal("not decoded")
		}
		i++
	}
}

// The decoder reads what the map reads did: exact names (as map keys),
// the last of repeated names, and for each field only its own type.
func TestDecodeLikeMaps(t *testing.T) {
	const head = `{"metadata":{"name":"a","namespace":"argocd"},`
	cases := map[string]struct {
		doc   string
		check func(service.Application) bool
	}{
		"NamesAreCaseSensitive": {`{"metadata":{"name":"a","namespace":"argocd","annotations":{"argocd.argoproj.io/Skip-Reconcile":"true"}},
			"spec":{"Project":"p","syncPolicy":{"Automated":{"selfHeal":true}}}}`,
			func(a service.Application) bool { return !a.SkipReconcile && a.Project == "" && !a.AutoSync }},
		"LastRepeatedNameWins": {`{"metadata":{"name":"a","name":"b","namespace":"argocd"},
			"spec":{"syncPolicy":{"automated":{"selfHeal":true}},"syncPolicy":{"automated":{}}},"status":{"sync":{"status":"Synced"},"sync":{}}}`,
			func(a service.Application) bool {
				return a.Name == "b" && a.AutoSync && !a.SelfHeal && a.SyncStatus == "Unknown"
			}},
		"EnabledNullIsOff": {head + `"spec":{"syncPolicy":{"automated":{"enabled":null,"selfHeal":true}}}}`,
			func(a service.Application) bool { return !a.AutoSync && !a.SelfHeal }},
		"HistoryIDsAsTheDynamicClientReadThem": {head + `"status":{"history":[{"id":"5"},{"id":9007199254740993},{"id":1e3},{"id":1.5},"x"]}}`,
			func(a service.Application) bool {
				return len(a.History) == 4 && a.History[0].ID == 0 && a.History[1].ID == 9007199254740993 &&
					a.History[2].ID == 1000 && a.History[3].ID == 1
			}},
		"EscapesAndInvalidUTF8": {`{"metadata":{"name":"caf\u00e9\ud800x","namespace":"argo` + "\xff" + `cd"}}`,
			func(a service.Application) bool { return a.Name == "café\uFFFDx" && a.Namespace == "argo\uFFFDcd" }},
		"WrongTypesReadAsAbsent": {head + `"spec":{"project":7,"source":{"repoURL":5,"path":"p"}},"status":{"reconciledAt":"yesterday",
			"resources":[{"kind":"Deployment","name":"web","health":{"status":3},"hook":"true"}]}}`,
			func(a service.Application) bool {
				return a.Project == "" && len(a.Sources) == 1 && a.Sources[0].RepoURL == "" && a.Sources[0].Path == "p" &&
					a.ReconciledAt == nil && len(a.Resources) == 1 && a.Resources[0].Health == nil && !a.Resources[0].Hook
			}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := DecodeApplication([]byte(c.doc), "argocd")
			if !ok || !c.check(a) {
				t.Errorf("decoded %+v (ok %v)", a, ok)
			}
		})
	}
}

// What is not one JSON object with a name is skipped, not an error.
func TestDecodeSkipsUnusable(t *testing.T) {
	for name, doc := range map[string]string{
		"String": `"x"`, "Array": `[1]`, "Empty": `{}`, "NoName": `{"metadata":{"namespace":"argocd"}}`,
		"Truncated": `{"metadata":{"name":"a"}`, "Trailing": `{"metadata":{"name":"a"}} {}`, "NotJSON": `{metadata}`,
	} {
		t.Run(name, func(t *testing.T) {
			if a, ok := DecodeApplication([]byte(doc), "argocd"); ok {
				t.Errorf("decoded %+v", a)
			}
		})
	}
}

// A source's Spec is what marshalling the source read as a map gives
// (sorted keys, encoding/json's escapes and numbers, repoURL without
// credentials), whatever the text; it is a copy that shares nothing with
// the input.
func TestDecodeSourceSpec(t *testing.T) {
	for name, source := range map[string]string{
		"Marshalled":      `{"path":"apps/web","repoURL":"https://g/r","targetRevision":"main"}`,
		"Spaces":          `{ "repoURL": "https://g/r", "path": "apps/web" }`,
		"Unsorted":        `{"repoURL":"https://g/r","path":"apps/web","helm":{"values":"a: 1","parameters":[{"value":"x","name":"n"}]}}`,
		"Escapes":         `{"path":"a\u0062c","repoURL":"https://g/r","helm":{"values":"x\ny"}}`,
		"HTMLCharacters":  `{"path":"a<b>&c","repoURL":"https://g/r"}`,
		"Numbers":         `{"directory":{"n":1.50,"m":1e2,"z":-0,"big":12345678901234567890},"repoURL":"https://g/r"}`,
		"Credentials":     `{"path":"p","repoURL":"https://user:s3cret@g/r"}`,
		"RepoURLNotText":  `{"path":"p","repoURL":5}`,
		"RepeatedNames":   `{"path":"p","path":"q","repoURL":"https://g/r"}`,
		"LineSeparator":   `{"path":"a` + "\u2028" + `b","repoURL":"https://g/r"}`,
		"NoRepoURLAtAll":  `{"chart":"redis","targetRevision":"1.0"}`,
		"EmptyObjectOnly": `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			doc := []byte(`{"metadata":{"name":"a","namespace":"argocd"},"spec":{"source":` + source + `}}`)
			a, ok := DecodeApplication(doc, "argocd")
			if !ok || len(a.Sources) != 1 {
				t.Fatalf("decoded %+v (ok %v)", a, ok)
			}
			var m map[string]any
			if err := utiljson.Unmarshal([]byte(source), &m); err != nil {
				t.Fatal(err)
			}
			want := sourceFromMap(m)
			if d := cmp.Diff(want, a.Sources[0]); d != "" {
				t.Errorf("source differs from the map's (-want +got):\n%s", d)
			}
			clear(doc)
			if d := cmp.Diff(want.Spec, a.Sources[0].Spec); d != "" || cap(a.Sources[0].Spec) > len(a.Sources[0].Spec)+16 {
				t.Errorf("spec changed with the input or holds spare room: %s", d)
			}
		})
	}
}

// When status.sync.comparedTo is the app's source, both share one array.
func TestComparedToSharesSources(t *testing.T) {
	a, ok := DecodeApplication(argocdtest.ApplicationJSON(1, 3), "argocd")
	if !ok || len(a.Sources) != 1 || len(a.Sync.ComparedTo) != 1 || &a.Sources[0] != &a.Sync.ComparedTo[0] {
		t.Errorf("sources %+v, compared %+v", a.Sources, a.Sync.ComparedTo)
	}
}

// Strings apps repeat across clusters are one copy, also after the read,
// for as long as reads meet them within a period.
func TestStringsSharedAcrossReads(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	table := NewStrings(func() time.Time { return now }, time.Minute)
	first, _ := NewApplicationDecoder("argocd", table).Decode(argocdtest.ApplicationJSON(1, 3))
	runtime.GC()
	second, _ := NewApplicationDecoder("argocd", table).Decode(argocdtest.ApplicationJSON(2, 3))
	for name, pair := range map[string][2]string{
		"project": {first.Project, second.Project}, "repo": {first.Sources[0].RepoURL, second.Sources[0].RepoURL},
		"server": {first.Destination.Server, second.Destination.Server}, "revision": {first.Sync.Revision, second.Sync.Revision},
		"kind": {first.Resources[0].Kind, second.Resources[0].Kind}, "status": {first.SyncStatus, second.SyncStatus},
	} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s %q is two copies", name, pair[0])
		}
	}
	held := table.Len()
	if held == 0 {
		t.Fatal("the table holds nothing after two reads")
	}
	// Two periods later a read meeting one app lets the other app's own
	// values (its namespaces) go.
	now = now.Add(time.Minute)
	NewApplicationDecoder("argocd", table).Decode(argocdtest.ApplicationJSON(2, 3))
	now = now.Add(time.Minute)
	NewApplicationDecoder("argocd", table).Decode(argocdtest.ApplicationJSON(2, 3))
	if n := table.Len(); n >= held {
		t.Errorf("%d values held after two periods, %d before", n, held)
	}
}

// The memory bound of issue 12 (2 KB per app with 3 rows), asserted with a
// margin: heap sizes depend on the Go version and word size, not on the
// machine.
func TestRetainedPerAppBound(t *testing.T) {
	perApp, apps := retained(t, fleet(300, 3))
	if perApp > 2048 {
		t.Errorf("%.0f B retained per app, want at most 2048", perApp)
	}
	runtime.KeepAlive(apps)
}

// FuzzDecodeApplication: reading an object's JSON gives what reading its
// unstructured form (the dynamic client's map) gives, whatever the text:
// repeated names, escapes, spacing, key order, odd types.
func FuzzDecodeApplication(f *testing.F) {
	f.Add(string(argocdtest.ApplicationJSON(1, 3)))
	f.Add(`{"metadata":{"name":"a","name":"b","namespace":"argocd"},"spec":{"source":{"repoURL":"https://u:p@g/r","path":"a\u0062"},
		"sources":[{"path":"p", "repoURL":"r"},"x"],"syncPolicy":{"automated":{"enabled":null}}},"status":{"history":[{"id":1e3}]}}`)
	f.Add(selfHealApp(`"sourceHydrator":{"drySource":{"repoURL":"r","path":1},"syncSource":{"path":"q"}}`, `"operationState":{"phase":"Error"}`))
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > maxFuzzInput {
			return
		}
		var obj map[string]any
		if utiljson.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		want, wantOK := ParseApplication(obj, "argocd")
		got, ok := DecodeApplication([]byte(doc), "argocd")
		if ok != wantOK {
			t.Fatalf("decoded %v, parsed %v", ok, wantOK)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("JSON and map forms differ (-map +json):\n%s", d)
		}
	})
}

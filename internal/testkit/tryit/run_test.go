package tryit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunner checks a Runner against a server: a saved value is used by a
// later line, an Until line is repeated until its fields hold, a non-2xx
// answer is an error, and a command gets its expanded arguments.
func TestRunner(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/things" && r.Header.Get("Authorization") == "Bearer tok":
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"id":"t-1"}`))
		case r.URL.Path == "/v1/things/t-1":
			state := "pending"
			if polls.Add(1) >= 3 {
				state = "active"
			}
			_, _ = w.Write([]byte(`{"id":"t-1","state":"` + state + `"}`))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	var gotArgs []string
	r := &Runner{Client: srv.Client(), Vars: map[string]string{"API": srv.URL, "ADMIN": "tok"}, Poll: time.Millisecond,
		Command: func(_ context.Context, args []string) (string, error) { gotArgs = args; return "ok", nil }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []Line{
		{Say: "create", Method: "POST", Path: "/v1/things", Token: "ADMIN", Body: json.RawMessage(`{}`), Save: &Save{Var: "ID", Field: "id"}},
		{Say: "wait", Method: "GET", Path: "/v1/things/${ID}", Until: map[string]string{"state": "active"}},
		{Say: "cmd", Command: []string{"stack-update", "--id", "${ID}"}},
	}
	for _, l := range lines {
		if _, err := r.Run(ctx, l); err != nil {
			t.Fatalf("%s: %v", l.Say, err)
		}
	}
	if polls.Load() != 3 {
		t.Errorf("the Until line asked %d times; want 3", polls.Load())
	}
	if strings.Join(gotArgs, " ") != "stack-update --id t-1" {
		t.Errorf("command args %q", gotArgs)
	}
	if _, err := r.Run(ctx, Line{Say: "missing", Method: "GET", Path: "/nope"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 answer: %v", err)
	}
}

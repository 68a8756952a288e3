package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestBadRequests(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	p := a.createPlan(f.agent, planBody("shared"))
	a.do("POST", "/v1/plans/"+p.ID+"/approve", f.member, nil, nil)

	with := func(key string, v any) map[string]any {
		b := planBody("shared")
		if v == nil {
			delete(b, key)
		} else {
			b[key] = v
		}
		return b
	}
	manyResources := make([]map[string]any, service.MaxPlanResources+1)
	for i := range manyResources {
		manyResources[i] = map[string]any{"kind": "Pod", "name": fmt.Sprintf("p%d", i)}
	}
	bigPayload := map[string]any{"blob": strings.Repeat("x", service.MaxPayloadBytes)}

	cases := []struct {
		name   string
		path   string
		body   any
		header header
		status int
		code   string
		field  string // for 422: a field the errors must name
	}{
		{"MalformedJSON", "/v1/plans", `{"cluster_id": `, nil, 400, "invalid_request", ""},
		{"NotAnObject", "/v1/plans", `[1, 2]`, nil, 400, "invalid_request", ""},
		{"WrongType", "/v1/plans", with("resources", "Deployment/api"), nil, 400, "invalid_request", ""},
		{"UnknownField", "/v1/plans", with("approve_now", true), nil, 400, "invalid_request", ""},
		{"NestedTooDeep", "/v1/plans", `{"cluster_id":"c","payload":{"a":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`, nil, 400, "invalid_request", ""},
		{"TrailingData", "/v1/plans", `{"cluster_id": "c"} {}`, nil, 400, "invalid_request", ""},
		{"EmptyBody", "/v1/plans", "", nil, 400, "invalid_request", ""},
		{"NoContentType", "/v1/plans", planBody("shared"), header{"Content-Type": ""}, 415, "unsupported_media_type", ""},
		{"TextPlain", "/v1/plans", planBody("shared"), header{"Content-Type": "text/plain"}, 415, "unsupported_media_type", ""},
		{"PayloadTooLarge", "/v1/plans", with("payload", bigPayload), nil, 413, "payload_too_large", ""},
		{"BodyTooLarge", "/v1/plans", `{"command": "` + strings.Repeat("x", 2<<20) + `"}`, nil, 413, "payload_too_large", ""},
		{"MissingCluster", "/v1/plans", with("cluster_id", nil), nil, 422, "validation_failed", "cluster_id"},
		{"BadVisibility", "/v1/plans", with("visibility", "public"), nil, 422, "validation_failed", "visibility"},
		{"TooManyResources", "/v1/plans", with("resources", manyResources), nil, 422, "validation_failed", "resources"},
		{"ResourceWithoutName", "/v1/plans", with("resources", []map[string]any{{"kind": "Pod"}}), nil, 422, "validation_failed", "resources[0].name"},
		{"PayloadNotObject", "/v1/plans", with("payload", []int{1}), nil, 422, "validation_failed", "payload"},
		{"NULInPayloadString", "/v1/plans", `{"cluster_id":"c","conversation_id":"v","visibility":"shared","tool":"t","command":"x","payload":{"a":{"b":"x\u0000y"}}}`, nil, 422, "validation_failed", "payload.a.b"},
		{"NULInPayloadKey", "/v1/plans", `{"cluster_id":"c","conversation_id":"v","visibility":"shared","tool":"t","command":"x","payload":{"a":{"k\u0000":1}}}`, nil, 422, "validation_failed", "payload.a"},
		{"NumberTooLarge", "/v1/plans", `{"cluster_id":"c","conversation_id":"v","visibility":"shared","tool":"t","command":"x","payload":{"n":[1e1000000]}}`, nil, 422, "validation_failed", "payload.n[0]"},
		{"NULInCommand", "/v1/plans", with("command", "rm\x00rf"), nil, 422, "validation_failed", "command"},
		{"NULInResourceName", "/v1/plans", with("resources", []map[string]any{{"kind": "Pod", "name": "a\x00"}}), nil, 422, "validation_failed", "resources[0].name"},
		{"ResultBadOutcome", "/v1/plans/" + p.ID + "/result", map[string]any{"outcome": "done"}, nil, 422, "validation_failed", "outcome"},
		{"ResultNULOutput", "/v1/plans/" + p.ID + "/result", `{"outcome":"executed","output":"a\u0000b"}`, nil, 422, "validation_failed", "output"},
		{"ResultWrongType", "/v1/plans/" + p.ID + "/result", map[string]any{"outcome": "executed", "output": 12}, nil, 400, "invalid_request", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := f.agent
			res := a.do("POST", c.path, tok, c.body, c.header)
			prob := res.wantProblem(t, c.status, c.code)
			if c.field != "" {
				var fields []string
				for _, e := range prob.Errors {
					fields = append(fields, e.Field)
				}
				if !slices.Contains(fields, c.field) {
					t.Errorf("errors name %v, want %q", fields, c.field)
				}
			}
		})
	}

	// Nothing stored was lost or changed by the bad requests.
	var page service.PlanPage
	a.do("GET", "/v1/plans", f.member, nil, nil).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Status != service.PlanApproved {
		t.Errorf("after bad requests: %d plans, first %+v", len(page.Items), page.Items)
	}

	queries := []struct {
		query  string
		status int
		code   string
	}{
		{"limit=abc", 400, "invalid_request"},
		{"limit=0", 422, "validation_failed"},
		{"limit=500", 422, "validation_failed"},
		{"status=done", 422, "validation_failed"},
		{"cursor=not-a-cursor", 400, "invalid_request"},
		{"name=a%00b", 422, "validation_failed"},
		{"cluster_id=%ff", 422, "validation_failed"},
		{"kind=%c3%28", 422, "validation_failed"},
	}
	for _, q := range queries {
		t.Run("List_"+q.query, func(t *testing.T) {
			a.do("GET", "/v1/plans?"+q.query, f.member, nil, nil).wantProblem(t, q.status, q.code)
		})
	}
}

func TestPayloadKeptSemantically(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	body := `{"cluster_id":"c","conversation_id":"v","visibility":"shared","tool":"t","command":"x",
		"payload":{"big":123456789012345678901234567890,"f":1.5e300,"s":"<tag>&\u00e9\ud83d\ude00","nested":[{"a":null},true]}}`
	res := a.do("POST", "/v1/plans", f.agent, body, nil)
	var p service.Plan
	res.decode(t, &p)
	var got service.Plan
	a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &got)
	for _, want := range []string{`123456789012345678901234567890`, `"nested":[{"a":null},true]`} {
		if !strings.Contains(string(got.Payload), want) {
			t.Errorf("stored payload %s lost %s", got.Payload, want)
		}
	}
	if !strings.Contains(string(got.Payload), "😀") && !strings.Contains(string(got.Payload), `\ud83d\ude00`) {
		t.Errorf("payload lost the emoji: %s", got.Payload)
	}
}

package api

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, _ := mustSpec(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
}

// TestRoutesMatchDocument fails when a route is undocumented, a documented
// operation does not exist, or the roles differ between code and document.
func TestRoutesMatchDocument(t *testing.T) {
	doc, _ := mustSpec(t)
	type rolesInfo struct {
		roles     []string
		humanOnly bool
	}
	code := map[string]rolesInfo{}
	for _, rt := range routes(Deps{}, nil) {
		if rt.asset {
			continue
		}
		var roles []string
		for _, r := range rt.roles {
			roles = append(roles, string(r))
		}
		sort.Strings(roles)
		code[rt.method+" "+rt.pattern] = rolesInfo{roles, rt.humanOnly}
	}
	documented := map[string]rolesInfo{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			var info rolesInfo
			raw, ok := op.Extensions["x-roles"].([]any)
			if !ok {
				t.Errorf("%s %s: x-roles missing", method, path)
			}
			for _, r := range raw {
				info.roles = append(info.roles, r.(string))
			}
			sort.Strings(info.roles)
			info.humanOnly, _ = op.Extensions["x-human-only"].(bool)
			documented[method+" "+path] = info
		}
	}
	for k, c := range code {
		d, ok := documented[k]
		switch {
		case !ok:
			t.Errorf("route %s is not in openapi/openapi.yaml", k)
		case !slices.Equal(c.roles, d.roles) || c.humanOnly != d.humanOnly:
			t.Errorf("route %s: code allows roles %v (human only %v), document says %v (%v)", k, c.roles, c.humanOnly, d.roles, d.humanOnly)
		}
	}
	for k := range documented {
		if _, ok := code[k]; !ok {
			t.Errorf("documented operation %s has no route in api/routes.go", k)
		}
	}

	// The router serves exactly the table.
	var walked []string
	handler := NewServer(Deps{Metrics: NewMetrics(newRegistry())}).(chi.Routes)
	_ = chi.Walk(handler, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked = append(walked, method+" "+route)
		return nil
	})
	if len(walked) != len(routes(Deps{}, nil)) {
		t.Errorf("router serves %d routes, table has %d: %v", len(walked), len(routes(Deps{}, nil)), walked)
	}
}

func TestDocsServed(t *testing.T) {
	a := newTestAPI(t)
	res := a.do("GET", "/openapi.yaml", "", nil, nil)
	if res.status != 200 || !strings.Contains(string(res.body), "openapi: 3.1") {
		t.Fatalf("/openapi.yaml: %d %.80s", res.status, res.body)
	}
	res = a.do("GET", "/docs", "", nil, nil)
	if res.status != 200 || !strings.Contains(string(res.body), "/openapi.yaml") {
		t.Fatalf("/docs: %d %.300s", res.status, res.body)
	}
	if strings.Contains(string(res.body), "cdn") || strings.Contains(string(res.body), "unpkg") {
		t.Errorf("/docs loads assets from a CDN: %.300s", res.body)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	a := newTestAPI(t)
	a.do("GET", "/v1/nope", "", nil, nil).wantProblem(t, 404, "not_found")
	a.do("DELETE", "/v1/plans", token(t, "u", "t", "admin"), nil, nil).wantProblem(t, 405, "method_not_allowed")
}

// TestResponseValidationCatchesDrift proves the response check used by every
// API test can fail: a plan without its status, an undocumented status code
// and a problem without a code are all refused.
func TestResponseValidationCatchesDrift(t *testing.T) {
	a := &testAPI{t: t}
	a.doc, a.router = mustSpec(t)
	req := httptest.NewRequest("GET", "/v1/plans/0190a000-0000-7000-8000-000000000000", nil)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := map[string]response{
		"PlanWithoutStatus":  {status: 200, header: jsonHeader, body: []byte(`{"id": "x"}`)},
		"UndocumentedStatus": {status: 418, header: jsonHeader, body: []byte(`{}`)},
		"ProblemWithoutCode": {status: 404, header: http.Header{"Content-Type": {"application/problem+json"}},
			body: []byte(`{"type": "about:blank", "title": "Not Found", "status": 404, "detail": "x"}`)},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			if err := a.validate(req, r); err == nil {
				t.Error("validation accepted a response that breaks the document")
			}
		})
	}
}

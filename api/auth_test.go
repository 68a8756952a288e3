package api

import (
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
)

func TestUnauthenticated(t *testing.T) {
	a := newTestAPI(t)
	good := authtest.Claims{Sub: "alice", Team: "team-a", Roles: []string{"member"}, Issuer: testIssuer, Audience: testAudience}
	with := func(mutate func(*authtest.Claims)) string {
		c := good
		mutate(&c)
		return authtest.MustHS256(t, testSecret, c)
	}
	cases := map[string]string{
		"Missing":        "",
		"WrongScheme":    "Basic YWxpY2U6cHc=",
		"EmptyBearer":    "Bearer ",
		"Expired":        "Bearer " + with(func(c *authtest.Claims) { c.Exp = time.Now().Add(-2 * time.Minute) }),
		"NoExp":          "Bearer " + with(func(c *authtest.Claims) { c.NoExp = true }),
		"WrongSignature": "Bearer " + authtest.MustHS256(t, []byte("not-the-server-secret-not-the-server-secret"), good),
		"WrongIssuer":    "Bearer " + with(func(c *authtest.Claims) { c.Issuer = "https://evil.test" }),
		"WrongAudience":  "Bearer " + with(func(c *authtest.Claims) { c.Audience = "someone-else" }),
		"AlgNone":        "Bearer " + authtest.Unsigned(t, good),
		"NoTeam":         "Bearer " + with(func(c *authtest.Claims) { c.Team = "" }),
		"NoSub":          "Bearer " + with(func(c *authtest.Claims) { c.Sub = "" }),
		"NotAJWT":        "Bearer abc.def.ghi",
	}
	for name, authz := range cases {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/v1/plans", "/v1/team"} {
				res := a.do("GET", path, "", nil, header{"Authorization": authz})
				res.wantProblem(t, 401, "unauthenticated")
				if res.header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
		})
	}
	// The same claims, correctly signed, get in: the cases above fail for the stated reason.
	if res := a.do("GET", "/v1/plans", "", nil, header{"Authorization": "Bearer " + with(func(*authtest.Claims) {})}); res.status != 200 {
		t.Fatalf("valid token: %d %s", res.status, res.body)
	}
}

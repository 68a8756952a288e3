package render

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// runInChild renders req in a child process that is this test binary, started
// through /usr/bin/env so the child (and only it) sees childEnvVar.
func runInChild(tb testing.TB, req Request, lim Limits) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := RunChild(ctx, "/usr/bin/env", []string{childEnvVar + "=1", self}, req, lim)
	if err != nil {
		tb.Fatalf("RunChild: %v (the tests need /usr/bin/env to start the child)", err)
	}
	return res
}

func TestRunChild(t *testing.T) {
	t.Run("RendersLikeInProcess", func(t *testing.T) {
		req := Request{Files: MustLoadRepo(t, "kust"), Source: Source{Path: "overlays/prod"}}
		res := runInChild(t, req, Limits{Timeout: time.Minute, MaxOutputBytes: 1 << 20})
		if res.Error != nil {
			t.Fatalf("child render failed: %v", res.Error)
		}
		assertGolden(t, "kustomize_overlay", res.Manifests)
	})
	t.Run("ErrorResultsCrossTheBoundary", func(t *testing.T) {
		req := Request{Files: MustLoadRepo(t, "helm"), AppName: "deps", Source: Source{Path: "charts/deps"}}
		assertErrorCode(t, runInChild(t, req, Limits{Timeout: time.Minute}), CodeRenderFailed, ReasonHelmDependenciesMissing)
	})
	t.Run("EmptyEnvironment", func(t *testing.T) {
		t.Setenv("KUKIE_TEST_PLANTED_SECRET", "planted-secret-value")
		// A chart that prints its environment would need a function Helm
		// does not have; the directory below names the variable and must
		// come back unchanged, and the child must still render with an
		// empty PATH and an unreachable proxy.
		files := map[string][]byte{"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env}\ndata: {k: KUKIE_TEST_PLANTED_SECRET}\n")}
		res := runInChild(t, Request{Files: files, Source: Source{Path: "app"}}, Limits{Timeout: time.Minute})
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		assertNotContains(t, string(res.Manifests), "planted-secret-value")
	})
}

// A template that never ends is killed at the configured timeout, with
// ReasonTimeout; the parent carries on and renders again.
func TestRunChildTimeout(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	res := runInChild(t, Request{Files: files, AppName: "loop", Source: Source{Path: "charts/loop"}}, Limits{Timeout: 300 * time.Millisecond})
	// The reason, not the message, tells the caller not to cache it.
	assertErrorCode(t, res, CodeRenderFailed, ReasonTimeout)
	assertContains(t, res.Error.Message, "timed out")

	again := runInChild(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web"}}, Limits{Timeout: time.Minute})
	if again.Error != nil {
		t.Fatalf("render after a killed child failed: %v", again.Error)
	}
}

func TestRunChildOutputCap(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {k: " + strings.Repeat("x", 64<<10) + "}\n"
	files := map[string][]byte{"app/big.yaml": []byte(big)}
	res := runInChild(t, Request{Files: files, Source: Source{Path: "app"}}, Limits{Timeout: time.Minute, MaxOutputBytes: 16 << 10})
	assertErrorCode(t, res, CodeRenderFailed, "")
	assertContains(t, res.Error.Message, "exceeds the limit")
}

// A template that allocates without bound fails under the memory limit
// instead of taking the server's memory.
func TestRunChildMemoryLimit(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	res := runInChild(t, Request{Files: files, AppName: "hungry", Source: Source{Path: "charts/hungry"}}, Limits{Timeout: time.Minute, MaxMemoryBytes: childMemoryScale * MinChildMemoryBytes})
	assertErrorCode(t, res, CodeRenderFailed, ReasonMemoryLimit)
	assertContains(t, res.Error.Message, "memory limit")
}

// The smallest limit a child is given still renders a chart (and the
// Go runtime's address-space reservations, far above it, do not count).
func TestRunChildMemoryLimitAllowsNormalRender(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	res := runInChild(t, Request{Files: files, AppName: "shop", Source: Source{Path: "charts/web"}}, Limits{Timeout: time.Minute, MaxMemoryBytes: childMemoryScale * MinChildMemoryBytes})
	if res.Error != nil {
		t.Fatalf("render under the memory limit failed: %v", res.Error)
	}
}

// A tree of a few MiB crosses to the child as raw bytes and renders.
func TestRunChildStreamsLargeTrees(t *testing.T) {
	files := MustLoadRepo(t, "kust")
	blob := make([]byte, 8<<20)
	for i := range blob {
		blob[i] = byte(i)
	}
	files["assets/blob.bin"] = blob
	// No memory limit: a -race child needs several times the memory.
	res := runInChild(t, Request{Files: files, Source: Source{Path: "overlays/prod"}}, Limits{Timeout: time.Minute})
	if res.Error != nil {
		t.Fatalf("child render failed: %v", res.Error)
	}
	assertGolden(t, "kustomize_overlay", res.Manifests)
}

// A child asked to mask (Request.Mask, as the server always asks) returns
// its manifests masked, with the values it masked in Secrets for the server
// to cut from its other texts; a child not asked returns them as rendered.
func TestRunChildMasks(t *testing.T) {
	const value = "s3cr3t-Pa55word-42"
	files := map[string][]byte{"app/secret.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + value + "}\n")}
	res := runInChild(t, Request{Files: files, Source: Source{Path: "app"}, Mask: true}, Limits{Timeout: time.Minute})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if !res.Masked || !slices.Contains(res.Secrets, value) {
		t.Errorf("Masked %v, Secrets %q: want the masked value in Secrets", res.Masked, res.Secrets)
	}
	assertNotContains(t, string(res.Manifests), value)
	assertContains(t, string(res.Manifests), "password: <masked>")

	plain := runInChild(t, Request{Files: files, Source: Source{Path: "app"}}, Limits{Timeout: time.Minute})
	if plain.Masked || plain.Secrets != nil || !strings.Contains(string(plain.Manifests), value) {
		t.Errorf("unmasked render: Masked %v, Secrets %q, manifests:\n%s", plain.Masked, plain.Secrets, plain.Manifests)
	}
}

// A child's error message is masked too: a chart's fail quoting a token
// does not carry the value out, and the value joins Secrets.
func TestRunChildMasksErrors(t *testing.T) {
	const token = "ghp_4x9QkR2mZ7bT1vW8nY3pL6sD0fH5jK2aC9eU" // gitleaks' github-pat shape
	files := map[string][]byte{
		"chart/Chart.yaml":        []byte("apiVersion: v2\nname: failing\nversion: 0.1.0\n"),
		"chart/values.yaml":       []byte("token: " + token + "\n"),
		"chart/templates/cm.yaml": []byte("{{ fail (printf \"bad token %s\" .Values.token) }}\n"),
	}
	res := runInChild(t, Request{Files: files, AppName: "failing", Source: Source{Path: "chart"}, Mask: true}, Limits{Timeout: time.Minute})
	if res.Error == nil {
		t.Fatalf("render succeeded:\n%s", res.Manifests)
	}
	assertContains(t, res.Error.Message, "bad token")
	assertNotContains(t, res.Error.Message, token)
	if !res.Masked || !slices.Contains(res.Secrets, token) {
		t.Errorf("Masked %v, Secrets %q: want the token in Secrets", res.Masked, res.Secrets)
	}
}

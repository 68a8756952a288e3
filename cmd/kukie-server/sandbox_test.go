package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/render"
)

// Each KUKIE_RENDER_SANDBOX mode, probed with this binary's own render child
// on this host (root: every layer): seccomp in every mode, a namespace for
// auto and namespace, none for seccomp; one start-up line each.
func TestRenderSandboxModes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[render.SandboxMode]string{
		render.SandboxAuto:      `"layers":["transport","seccomp","namespace:network"]`,
		render.SandboxSeccomp:   `"layers":["transport","seccomp"]`,
		render.SandboxNamespace: `"layers":["transport","seccomp","namespace:network"]`,
	} {
		t.Run(string(mode), func(t *testing.T) {
			var logs bytes.Buffer
			sb, err := renderSandbox(t.Context(), mode, self, render.Limits{}, slog.New(slog.NewJSONHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("renderSandbox: %v (the tests run as root)", err)
			}
			line := strings.TrimSpace(logs.String())
			if strings.Count(line, "\n") != 0 || !strings.Contains(line, `"level":"INFO","msg":"render sandbox"`) || !strings.Contains(line, want) {
				t.Errorf("start-up line %q, want one INFO line with %s (sandbox %v)", line, want, sb.Layers())
			}
		})
	}
}

// A host where the render child cannot install its seccomp filter stops the
// server in every mode (review2 finding 7), with one line naming the
// variable and what the host lacks. The child here is a script answering
// as a child that could not install the filter does.
func TestRenderSandboxWithoutSeccompFailsStartUp(t *testing.T) {
	child := filepath.Join(t.TempDir(), "kukie-server")
	script := "#!/bin/sh\necho '{\"error\":{\"code\":\"render_failed\",\"reason\":\"" + render.ReasonSandboxUnavailable +
		"\",\"message\":\"installing the seccomp filter: invalid argument\"}}'\n"
	if err := os.WriteFile(child, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []render.SandboxMode{render.SandboxAuto, render.SandboxSeccomp, render.SandboxNamespace} {
		t.Run(string(mode), func(t *testing.T) {
			var logs bytes.Buffer
			_, err := renderSandbox(t.Context(), mode, child, render.Limits{}, slog.New(slog.NewJSONHandler(&logs, nil)))
			if err == nil {
				t.Fatalf("the server would start without seccomp; it logged %s", logs.String())
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "KUKIE_RENDER_SANDBOX="+string(mode)+": ") || !strings.Contains(msg, "install a seccomp filter") || strings.Contains(msg, "\n") {
				t.Errorf("start-up error %q, want one line naming KUKIE_RENDER_SANDBOX and the missing seccomp filter", msg)
			}
		})
	}
}

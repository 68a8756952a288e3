package kube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// The accepted argocd-cm keys of the fixture, and keys that must never be
// kept: Dex's client secret and a setting ownership does not read.
var (
	settingsKept = map[string]string{
		argocd.SettingInstallationID:                   "prod-eu",
		argocd.SettingInstanceLabelKey:                 "example.com/argocd-app",
		argocd.SettingTrackingMethod:                   "annotation+label",
		argocd.SettingIgnorePrefix + "apps_Deployment": "jsonPointers:\n- /spec/replicas\n",
	}
	settingsSecret = "dex-client-secret-4f9a1c"
	settingsOther  = map[string]string{
		"dex.config": "connectors:\n- type: github\n  config:\n    clientSecret: " + settingsSecret + "\n",
		"resource.customizations.health.apps_Deployment": "hs = {}\nreturn hs\n",
	}
)

// mustArgoCDConfigMap creates argocd-cm in the argocd namespace of
// withArgo, and deletes it when the test ends.
func mustArgoCDConfigMap(t *testing.T) {
	t.Helper()
	data := map[string]string{}
	for _, m := range []map[string]string{settingsKept, settingsOther} {
		for k, v := range m {
			data[k] = v
		}
	}
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "argocd-cm", "namespace": "argocd"}, "data": data})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := withArgo.Apply(ctx, doc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = withArgo.Delete(ctx, "ConfigMap", "argocd", "argocd-cm") })
}

// defaultSettings are Argo CD's defaults, unread, with the note left out.
func defaultSettings() service.ArgoCDSettings {
	s := argocd.ParseSettings(nil)
	s.Read = false
	return s
}

func TestReadSettings(t *testing.T) {
	ctx := context.Background()
	read := func(t *testing.T, user string) (service.AppRead, *counter, error) {
		t.Helper()
		r, clusters, obs := mustReader(t, 20*time.Second, kubeconfig(t, withArgo, user))
		got, err := r.ListApplications(ctx, clusters[0])
		return got, obs, err
	}
	wantUnread := func(t *testing.T, s service.ArgoCDSettings, why string) {
		t.Helper()
		if !strings.Contains(s.Note, why) || !strings.Contains(s.Note, "argocd-cm") {
			t.Errorf("note %q does not say %q about argocd-cm", s.Note, why)
		}
		s.Note = ""
		if diff := cmp.Diff(defaultSettings(), s); diff != "" {
			t.Errorf("unread settings are not the defaults (-want +got):\n%s", diff)
		}
	}

	t.Run("Absent", func(t *testing.T) {
		got, _, err := read(t, k8stest.UserAdmin)
		if err != nil {
			t.Fatal(err)
		}
		wantUnread(t, got.Settings, "no ConfigMap")
	})

	mustArgoCDConfigMap(t)

	t.Run("OnlyAcceptedKeys", func(t *testing.T) {
		got, obs, err := read(t, k8stest.UserAdmin)
		if err != nil {
			t.Fatal(err)
		}
		s := got.Settings
		if !s.Read || s.Note != "" || s.InstallationID != "prod-eu" || s.LabelKey() != "example.com/argocd-app" ||
			s.TrackingMethod != "annotation+label" {
			t.Errorf("settings = %+v", s)
		}
		if want := []service.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}; !cmp.Equal(want, s.IgnoreRules) {
			t.Errorf("system-wide ignore rules = %+v, want %+v", s.IgnoreRules, want)
		}
		// Whatever ParseSettings makes of them, the reader gave it exactly
		// the accepted keys.
		if diff := cmp.Diff(argocd.ParseSettings(settingsKept), s); diff != "" {
			t.Errorf("settings differ from those of the accepted keys alone (-want +got):\n%s", diff)
		}
		everything := fmt.Sprintf("%#v", got)
		for _, secret := range []string{settingsSecret, "dex.config", "clientSecret", "resource.customizations.health"} {
			if strings.Contains(everything, secret) {
				t.Errorf("the read keeps %q", secret)
			}
		}
		if obs.ok.Load() != 1 || obs.failed.Load() != 0 {
			t.Errorf("observed %d ok and %d failed LISTs, want the one LIST (the GET is no LIST)", obs.ok.Load(), obs.failed.Load())
		}
	})

	t.Run("Forbidden", func(t *testing.T) {
		// May list Applications in argocd, not read its ConfigMaps.
		got, _, err := read(t, k8stest.UserArgoCDReader)
		if err != nil || len(got.Apps) == 0 {
			t.Fatalf("%d apps, %v", len(got.Apps), err)
		}
		wantUnread(t, got.Settings, "may not read")
	})

	t.Run("ApplicationsForbiddenToo", func(t *testing.T) {
		got, _, err := read(t, k8stest.UserNobody)
		if service.ErrorReason(err) != kube.ReasonForbidden {
			t.Fatalf("err %v, want %s", err, kube.ReasonForbidden)
		}
		wantUnread(t, got.Settings, "may not read")
	})

	t.Run("OtherFailure", func(t *testing.T) {
		// The API server fails the GET of argocd-cm with a 500: the
		// Applications are read all the same.
		var failed atomic.Int64
		conn := interceptingAdmin{cluster: withArgo, intercept: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
			if req.URL.Path != "/api/v1/namespaces/argocd/configmaps/argocd-cm" {
				return next.RoundTrip(req)
			}
			failed.Add(1)
			return internalError(req), nil
		}}
		obs := &counter{}
		r, err := kube.NewReader(conn, kube.ReaderOptions{Timeout: 20 * time.Second, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.ListApplications(ctx, service.Cluster{ID: "c", TeamID: "t", ArgoCDNamespace: "argocd"})
		if err != nil || len(got.Apps) == 0 {
			t.Fatalf("%d apps, %v", len(got.Apps), err)
		}
		if failed.Load() == 0 {
			t.Fatal("the GET of argocd-cm was not made")
		}
		wantUnread(t, got.Settings, "could not be read")
		if obs.ok.Load() != 1 || obs.failed.Load() != 0 {
			t.Errorf("observed %d ok and %d failed LISTs, want 1 ok", obs.ok.Load(), obs.failed.Load())
		}
	})

	t.Run("NotInstalled", func(t *testing.T) {
		r, clusters, _ := mustReader(t, 20*time.Second, kubeconfig(t, withoutArgo, k8stest.UserAdmin))
		got, err := r.ListApplications(ctx, clusters[0])
		if service.ErrorReason(err) != kube.ReasonNotInstalled {
			t.Fatalf("err %v", err)
		}
		if got.Settings.Read {
			t.Errorf("settings read on a cluster without Argo CD: %+v", got.Settings)
		}
	})
}

// internalError is an API server's 500 answer to req.
func internalError(req *http.Request) *http.Response {
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Message: "etcd is having a bad day"})
	return &http.Response{StatusCode: http.StatusInternalServerError, Request: req,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(body)))}
}

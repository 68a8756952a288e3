package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSettingKeys: of argocd-cm's data only the keys ownership reads are
// kept; Dex's configuration and other settings are dropped.
func TestSettingKeys(t *testing.T) {
	want := map[string]string{
		"installationID":                                            "prod",
		"application.instanceLabelKey":                              "example.com/app",
		"application.resourceTrackingMethod":                        "annotation",
		"resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers: [/spec/replicas]",
		"resource.customizations.ignoreDifferences.all":             "jsonPointers: [/status]",
		"resource.customizations":                                   "apps/Deployment: {}",
	}
	data := map[string]any{
		"resource.customizations.health.apps_Deployment": "return {}",
		"dex.config":   "clientSecret: s3cret",
		"repositories": "- url: https://example.com/r.git",
		"url":          "https://argocd.example.com",
	}
	for k, v := range want {
		data[k] = v
	}
	configMap := map[string]any{"data": data}
	if diff := cmp.Diff(want, settingKeys(configMap)); diff != "" {
		t.Errorf("kept keys (-want +got):\n%s", diff)
	}
	if got := settingKeys(map[string]any{}); len(got) != 0 {
		t.Errorf("a ConfigMap without data kept %v", got)
	}
}

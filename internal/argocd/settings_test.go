package argocd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kukie/gitops-server/service"
)

func TestParseSettings(t *testing.T) {
	cases := map[string]struct {
		data map[string]string
		want service.ArgoCDSettings
	}{
		"Empty": {nil, service.ArgoCDSettings{Read: true}},
		"Tracking": {map[string]string{"installationID": "prod", "application.instanceLabelKey": "argocd.argoproj.io/instance",
			"application.resourceTrackingMethod": "annotation+label"},
			service.ArgoCDSettings{Read: true, InstallationID: "prod", InstanceLabelKey: "argocd.argoproj.io/instance",
				TrackingMethod: "annotation+label"}},
		"TrackingLabel":      {map[string]string{"application.resourceTrackingMethod": "label"}, service.ArgoCDSettings{Read: true, TrackingMethod: "label"}},
		"TrackingAnnotation": {map[string]string{"application.resourceTrackingMethod": "annotation"}, service.ArgoCDSettings{Read: true, TrackingMethod: "annotation"}},
		"TrackingUnknown":    {map[string]string{"application.resourceTrackingMethod": "Annotation"}, service.ArgoCDSettings{Read: true}},
		"SplitKeyGroupKind": {map[string]string{"resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers:\n- /spec/replicas\n"},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}}},
		"SplitKeyDottedGroup": {map[string]string{"resource.customizations.ignoreDifferences.admissionregistration.k8s.io_MutatingWebhookConfiguration": "jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle']"},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", HasUnevaluated: true}}}},
		"SplitKeyCoreKind": {map[string]string{"resource.customizations.ignoreDifferences.Service": "jsonPointers: [/spec/clusterIP]"},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{{Kind: "Service", JSONPointers: []string{"/spec/clusterIP"}}}}},
		"SplitKeyAll": {map[string]string{"resource.customizations.ignoreDifferences.all": "managedFieldsManagers: [kube-controller-manager]\njsonPointers: [/metadata/labels/x]"},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{{Group: "*", Kind: "*", JSONPointers: []string{"/metadata/labels/x"}, HasUnevaluated: true}}}},
		"SplitKeyTooManyUnderscores": {map[string]string{"resource.customizations.ignoreDifferences.a_b_c": "jsonPointers: [/x]"}, service.ArgoCDSettings{Read: true}},
		"SplitKeyMalformedYAML":      {map[string]string{"resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers: [/x"}, service.ArgoCDSettings{Read: true}},
		"SplitKeyWrongType":          {map[string]string{"resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers: {a: b}"}, service.ArgoCDSettings{Read: true}},
		"SplitKeyEmptyRule":          {map[string]string{"resource.customizations.ignoreDifferences.apps_Deployment": "{}"}, service.ArgoCDSettings{Read: true}},
		"OtherCustomizationIgnored":  {map[string]string{"resource.customizations.health.apps_Deployment": "jsonPointers: [/x]"}, service.ArgoCDSettings{Read: true}},
		"Legacy": {map[string]string{"resource.customizations": `
apps/Deployment:
  ignoreDifferences: |
    jsonPointers:
    - /spec/replicas
ConfigMap:
  ignoreDifferences: "jsonPointers: [/data/x]"
  health.lua: "return {}"
"*/*":
  ignoreDifferences: |
    jsonPointers: [/metadata/annotations/y]
batch/Job:
  health.lua: "return {}"
bad/Entry: 7
broken/Yaml:
  ignoreDifferences: "jsonPointers: [/x"
`},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{
				{Group: "*", Kind: "*", JSONPointers: []string{"/metadata/annotations/y"}},
				{Kind: "ConfigMap", JSONPointers: []string{"/data/x"}},
				{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}}},
		"SplitKeyReplacesLegacy": {map[string]string{
			"resource.customizations":                                   "apps/Deployment:\n  ignoreDifferences: 'jsonPointers: [/spec/replicas]'\nService:\n  ignoreDifferences: 'jsonPointers: [/spec/a]'\n",
			"resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers: [/spec/template]",
			"resource.customizations.ignoreDifferences.Service":         "jqPathExpressions: [.spec.b]"},
			service.ArgoCDSettings{Read: true, IgnoreRules: []service.IgnoreRule{
				{Kind: "Service", HasUnevaluated: true},
				{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/template"}}}}},
		"LegacyMalformed": {map[string]string{"resource.customizations": "[unclosed"}, service.ArgoCDSettings{Read: true}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, ParseSettings(c.data)); diff != "" {
				t.Errorf("ParseSettings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSettingKeys(t *testing.T) {
	for key, want := range map[string]bool{
		"installationID": true, "application.instanceLabelKey": true, "application.resourceTrackingMethod": true,
		"resource.customizations": true, "resource.customizations.ignoreDifferences.all": true,
		"resource.customizations.ignoreDifferences.": false, "resource.customizations.health.apps_Deployment": false,
		"dex.config": false, "url": false,
	} {
		if got := SettingKeys(key); got != want {
			t.Errorf("SettingKeys(%q) = %v, want %v", key, got, want)
		}
	}
}

// FuzzParseSettings: no value panics, every rule has a kind or a glob, and
// the tracking method is one of the known ones or empty.
func FuzzParseSettings(f *testing.F) {
	f.Add("apps_Deployment", "jsonPointers: [/spec/replicas]", "apps/Deployment:\n  ignoreDifferences: 'jsonPointers: [/x]'\n", "label")
	f.Add("all", "jqPathExpressions: [.a]\nmanagedFieldsManagers: [m]", "Service:\n  ignoreDifferences: |\n    jsonPointers: [/a]\n", "annotation+label")
	f.Add("a_b_c", "{", "- 1", "x")
	f.Add("Service", "jsonPointers: [1, null]", "x/y/z:\n  ignoreDifferences: 'jsonPointers: [/a]'", "")
	f.Fuzz(func(t *testing.T, groupKind, value, legacy, method string) {
		if len(groupKind)+len(value)+len(legacy)+len(method) > maxFuzzInput {
			return
		}
		s := ParseSettings(map[string]string{SettingIgnorePrefix + groupKind: value, SettingLegacyCustomizations: legacy,
			SettingTrackingMethod: method})
		switch s.TrackingMethod {
		case "", TrackingMethodLabel, TrackingMethodAnnotation, TrackingMethodAnnotationAndLabel:
		default:
			t.Fatalf("tracking method %q", s.TrackingMethod)
		}
		for _, r := range s.IgnoreRules {
			if len(r.JSONPointers) == 0 && !r.HasUnevaluated {
				t.Fatalf("empty rule %+v", r)
			}
			if r.Name != "" || r.Namespace != "" {
				t.Fatalf("system-wide rule with a name or namespace %+v", r)
			}
			RuleApplies(r, "apps", "Deployment", "ns", "web")
		}
	})
}

// kustomize.buildOptions is kept for the repo tab's kustomize renders.
func TestParseSettingsKustomizeBuildOptions(t *testing.T) {
	if !SettingKeys(SettingKustomizeBuildOptions) {
		t.Error("kustomize.buildOptions is not read")
	}
	s := ParseSettings(map[string]string{SettingKustomizeBuildOptions: "--enable-helm --load-restrictor LoadRestrictionsNone"})
	if s.KustomizeBuildOptions != "--enable-helm --load-restrictor LoadRestrictionsNone" {
		t.Errorf("build options = %q", s.KustomizeBuildOptions)
	}
}

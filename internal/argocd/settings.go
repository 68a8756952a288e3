package argocd

import (
	"sort"
	"strings"

	"github.com/kukie/gitops-server/service"
	"sigs.k8s.io/yaml"
)

// The argocd-cm keys ownership answers depend on: only these are read.
const (
	SettingInstallationID   = "installationID"
	SettingInstanceLabelKey = "application.instanceLabelKey"
	SettingTrackingMethod   = "application.resourceTrackingMethod"
	// SettingKustomizeBuildOptions are the flags Argo CD passes to every
	// kustomize build (util/settings/settings.go kustomizeBuildOptionsKey).
	SettingKustomizeBuildOptions = "kustomize.buildOptions"
	// SettingIgnorePrefix is followed by <group>_<kind> or "all".
	SettingIgnorePrefix         = "resource.customizations.ignoreDifferences."
	SettingLegacyCustomizations = "resource.customizations"
)

// Tracking methods of application.resourceTrackingMethod
// (pkg/apis/application/v1alpha1 TrackingMethod).
const (
	TrackingMethodLabel              = "label"
	TrackingMethodAnnotation         = "annotation"
	TrackingMethodAnnotationAndLabel = "annotation+label"
)

// SettingKeys reports whether an argocd-cm key is one ownership reads; the
// reader keeps nothing else (the ConfigMap may hold Dex secrets and
// legacy repository credentials).
func SettingKeys(key string) bool {
	switch key {
	case SettingInstallationID, SettingInstanceLabelKey, SettingTrackingMethod, SettingLegacyCustomizations,
		SettingKustomizeBuildOptions:
		return true
	}
	return len(key) > len(SettingIgnorePrefix) && key[:len(SettingIgnorePrefix)] == SettingIgnorePrefix
}

// ParseSettings reads the settings from argocd-cm's data (only the keys
// SettingKeys accepts). Malformed values are ignored: the defaults apply.
// A tracking method other than the three Argo CD knows reads as absent.
func ParseSettings(data map[string]string) service.ArgoCDSettings {
	s := service.ArgoCDSettings{Read: true, InstallationID: data[SettingInstallationID],
		InstanceLabelKey: data[SettingInstanceLabelKey], KustomizeBuildOptions: data[SettingKustomizeBuildOptions]}
	switch m := data[SettingTrackingMethod]; m {
	case TrackingMethodLabel, TrackingMethodAnnotation, TrackingMethodAnnotationAndLabel:
		s.TrackingMethod = m
	}
	s.IgnoreRules = ignoreOverrides(data)
	return s
}

// ignoreDiff is the value of an ignoreDifferences customization
// (types.go OverrideIgnoreDiff).
type ignoreDiff struct {
	JSONPointers          []string `json:"jsonPointers"`
	JQPathExpressions     []string `json:"jqPathExpressions"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers"`
}

// ignoreOverrides builds the system-wide ignoreDifferences rules as
// util/settings/settings.go GetResourceOverrides does: the legacy
// resource.customizations map (keys "group/kind" or "Kind"; each entry's
// ignoreDifferences is a YAML string), then the split keys
// resource.customizations.ignoreDifferences.<group>_<kind> (or <Kind>, or
// "all" for every group and kind), each replacing the legacy entry of the
// same key. Where upstream fails the whole list on one malformed value,
// only that value is skipped here. Rules come out in key order.
func ignoreOverrides(data map[string]string) []service.IgnoreRule {
	overrides := map[string]ignoreDiff{}
	if raw := data[SettingLegacyCustomizations]; raw != "" {
		var legacy map[string]any
		if yaml.Unmarshal([]byte(raw), &legacy) == nil {
			for key, entry := range legacy {
				e, _ := entry.(map[string]any)
				text, ok := e["ignoreDifferences"].(string)
				var d ignoreDiff
				if ok && yaml.Unmarshal([]byte(text), &d) == nil {
					overrides[key] = d
				}
			}
		}
	}
	for k, v := range data {
		groupKind, ok := strings.CutPrefix(k, SettingIgnorePrefix)
		if !ok {
			continue
		}
		key, ok := overrideKey(groupKind)
		var d ignoreDiff
		if ok && yaml.Unmarshal([]byte(v), &d) == nil {
			overrides[key] = d
		}
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rules []service.IgnoreRule
	for _, k := range keys {
		d := overrides[k]
		// util/argo/normalizers/util.go getGroupKindForOverrideKey.
		parts := strings.Split(k, "/")
		var rule service.IgnoreRule
		switch len(parts) {
		case 1:
			rule.Kind = parts[0]
		case 2:
			rule.Group, rule.Kind = parts[0], parts[1]
		default:
			continue
		}
		if len(d.JSONPointers) == 0 && len(d.JQPathExpressions) == 0 && len(d.ManagedFieldsManagers) == 0 {
			continue
		}
		rule.JSONPointers = d.JSONPointers
		rule.HasUnevaluated = len(d.JQPathExpressions) > 0 || len(d.ManagedFieldsManagers) > 0
		rules = append(rules, rule)
	}
	return rules
}

// overrideKey turns the <group_kind> of a split key into the override map's
// key (settings.go convertToOverrideKey): "apps_Deployment" is
// "apps/Deployment", a bare "Service" stays "Service" (core group), "all"
// is "*/*"; more than one "_" is not a key.
func overrideKey(groupKind string) (string, bool) {
	parts := strings.Split(groupKind, "_")
	switch {
	case len(parts) == 2:
		return parts[0] + "/" + parts[1], true
	case groupKind == "all":
		return "*/*", true
	case len(parts) == 1 && groupKind != "":
		return groupKind, true
	}
	return "", false
}

package argocd

import "github.com/kukie/gitops-server/service"

// The argocd-cm keys ownership answers depend on: only these are read.
const (
	SettingInstallationID   = "installationID"
	SettingInstanceLabelKey = "application.instanceLabelKey"
	SettingTrackingMethod   = "application.resourceTrackingMethod"
	// SettingIgnorePrefix is followed by <group>_<kind> or "all".
	SettingIgnorePrefix         = "resource.customizations.ignoreDifferences."
	SettingLegacyCustomizations = "resource.customizations"
)

// SettingKeys reports whether an argocd-cm key is one ownership reads; the
// reader keeps nothing else (the ConfigMap may hold Dex secrets and
// legacy repository credentials).
func SettingKeys(key string) bool {
	switch key {
	case SettingInstallationID, SettingInstanceLabelKey, SettingTrackingMethod, SettingLegacyCustomizations:
		return true
	}
	return len(key) > len(SettingIgnorePrefix) && key[:len(SettingIgnorePrefix)] == SettingIgnorePrefix
}

// ParseSettings reads the settings from argocd-cm's data (only the keys
// SettingKeys accepts). Malformed values are ignored: the defaults apply.
func ParseSettings(data map[string]string) service.ArgoCDSettings {
	s := service.ArgoCDSettings{Read: true, InstallationID: data[SettingInstallationID],
		InstanceLabelKey: data[SettingInstanceLabelKey], TrackingMethod: data[SettingTrackingMethod]}
	return s
}

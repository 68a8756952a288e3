package service

// ArgoCDSettings are the argocd-cm settings that change ownership answers
// (only these keys are read; the ConfigMap itself is never stored or
// logged).
type ArgoCDSettings struct {
	// InstallationID is installationID: when set, objects whose
	// argocd.argoproj.io/installation-id annotation differs belong to
	// another Argo CD instance.
	InstallationID string
	// InstanceLabelKey is application.instanceLabelKey (default
	// app.kubernetes.io/instance).
	InstanceLabelKey string
	// TrackingMethod is application.resourceTrackingMethod: "" (absent),
	// "label", "annotation" or "annotation+label".
	TrackingMethod string
	// IgnoreRules are the system-wide rules of
	// resource.customizations.ignoreDifferences.<group_kind>, ...all and the
	// legacy resource.customizations; merged with each app's own.
	IgnoreRules []IgnoreRule
	// KustomizeBuildOptions is kustomize.buildOptions, passed to every
	// kustomize render of the repo tab.
	KustomizeBuildOptions string
	// Read is false when the ConfigMap could not be read (forbidden or
	// absent): the defaults apply and Note says why.
	Read bool
	Note string
}

// DefaultInstanceLabelKey is Argo CD's default application.instanceLabelKey.
const DefaultInstanceLabelKey = "app.kubernetes.io/instance"

// LabelKey is the instance label key in force.
func (s ArgoCDSettings) LabelKey() string {
	if s.InstanceLabelKey == "" {
		return DefaultInstanceLabelKey
	}
	return s.InstanceLabelKey
}

// IgnoreRule is one spec.ignoreDifferences entry. Only JSONPointers can be
// evaluated here; the other forms are kept to say so.
type IgnoreRule struct {
	Group, Kind, Name, Namespace string
	JSONPointers                 []string
	// HasUnevaluated is set when the rule also has jqPathExpressions or
	// managedFieldsManagers, which this server cannot evaluate.
	HasUnevaluated bool
}

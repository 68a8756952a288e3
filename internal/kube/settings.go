package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// settingsConfigMap is Argo CD's settings ConfigMap, in its namespace.
const settingsConfigMap = "argocd-cm"

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// readSettingsBeside reads the settings in the background, so a cold
// list reads argocd-cm beside its LIST instead of after it: one round trip
// fewer. The answer comes on the channel; a caller may leave it unread.
func readSettingsBeside(ctx context.Context, dyn dynamic.Interface, namespace string) <-chan service.ArgoCDSettings {
	out := make(chan service.ArgoCDSettings, 1)
	go func() { out <- readSettings(ctx, dyn, namespace) }()
	return out
}

// readSettings GETs argocd-cm in Argo CD's namespace and returns the
// settings ownership answers depend on. It never fails: a ConfigMap that
// is forbidden, absent or unreadable gives Argo CD's defaults and a note.
// The ConfigMap can hold Dex configuration and legacy repository
// credentials, so only the keys argocd.SettingKeys accepts leave this
// function, and neither the ConfigMap nor the error's text is kept.
func readSettings(ctx context.Context, dyn dynamic.Interface, namespace string) service.ArgoCDSettings {
	if namespace == "" {
		namespace = service.DefaultArgoCDNamespace
	}
	cm, err := dyn.Resource(configMapsGVR).Namespace(namespace).Get(ctx, settingsConfigMap, metav1.GetOptions{})
	if err != nil {
		var why string
		switch {
		case apierrors.IsForbidden(err):
			why = "Kukie's role may not read the ConfigMap %s in namespace %s"
		case apierrors.IsNotFound(err):
			why = "there is no ConfigMap %s in namespace %s"
		default:
			why = "the ConfigMap %s in namespace %s could not be read just now"
		}
		s := argocd.ParseSettings(nil)
		s.Read = false
		s.Note = "Argo CD's settings were not read (" + fmt.Sprintf(why, settingsConfigMap, namespace) +
			"): its defaults are assumed for the instance label, the tracking method, the installation ID and system-wide ignoreDifferences."
		return s
	}
	return argocd.ParseSettings(settingKeys(cm.Object))
}

// settingKeys returns the string values of the accepted keys of a
// ConfigMap's data, and nothing else.
func settingKeys(configMap map[string]any) map[string]string {
	data, _ := configMap["data"].(map[string]any)
	kept := map[string]string{}
	for k, v := range data {
		if s, ok := v.(string); ok && argocd.SettingKeys(k) {
			kept[k] = s
		}
	}
	return kept
}

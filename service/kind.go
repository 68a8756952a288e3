package service

import "strings"

// wellKnownKinds maps kubectl's short names and plurals of built-in kinds
// to their API group and lower-case kind.
var wellKnownKinds = func() map[string][2]string {
	m := map[string][2]string{}
	add := func(group, kind string, aliases ...string) {
		for _, a := range append(aliases, kind, kind+"s") {
			m[a] = [2]string{group, kind}
		}
	}
	add("", "pod", "po")
	add("", "service", "svc")
	add("", "configmap", "cm")
	add("", "secret")
	add("", "namespace", "ns")
	add("", "serviceaccount", "sa")
	add("", "persistentvolumeclaim", "pvc")
	add("", "persistentvolume", "pv")
	add("apps", "deployment", "deploy")
	add("apps", "replicaset", "rs")
	add("apps", "statefulset", "sts")
	add("apps", "daemonset", "ds")
	add("batch", "job")
	add("batch", "cronjob", "cj")
	add("networking.k8s.io", "ingress", "ing", "ingresses")
	add("networking.k8s.io", "networkpolicy", "netpol", "networkpolicies")
	add("autoscaling", "horizontalpodautoscaler", "hpa")
	return m
}()

// CanonicalKind turns a kind as a user or the agent wrote it (deploy,
// Deployments, deployments.apps) into a lower-case kind and group, for the
// built-in kinds kubectl knows by short names. Other kinds are returned
// lower-cased with the group given (or the one after the first ".").
// Plans whose resources could not be resolved in the cluster still join
// the app history through it.
func CanonicalKind(group, kind string) (string, string) {
	k := strings.ToLower(strings.TrimSpace(kind))
	if name, g, ok := strings.Cut(k, "."); ok && group == "" {
		k, group = name, g
	}
	if known, ok := wellKnownKinds[k]; ok && (group == "" || group == known[0]) {
		return known[0], known[1]
	}
	return group, k
}

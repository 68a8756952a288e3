//go:build tools

// Package tools pins k8s.io/kubernetes so `go build k8s.io/kubernetes/cmd/kube-apiserver`
// in this module builds the test API server. It is a separate module so the
// service never depends on k8s.io/kubernetes.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

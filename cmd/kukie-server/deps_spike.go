package main

// The repo tab's libraries (issue 11 spike): linked in to measure what they
// cost the binary before the packages that use them exist.
import (
	_ "github.com/go-git/go-git/v5"
	_ "github.com/zricethezav/gitleaks/v8/detect"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "helm.sh/helm/v3/pkg/releaseutil"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
)

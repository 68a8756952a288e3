// Package render turns one Argo CD application source, read from an in-memory
// repository tree, into the manifests Argo CD's repo server would produce for it
// (reposerver/repository/repository.go upstream): plain directories, kustomize
// and Helm charts, rendered in a child process with time, memory and output
// limits because neither kustomize nor Helm can be cancelled.
package render

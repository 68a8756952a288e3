// Package service is the centre of the Kukie GitOps server: domain types, the
// error type with its codes, and the small interfaces the service consumes
// (stores, verifiers). Adapters such as store and auth import this package;
// it imports none of them.
package service

// Package service is the centre of the Kukie GitOps server: domain types,
// the error type with its codes, the use cases, the small interfaces they
// consume (stores, readers, verifiers) and the types adapters parse into
// (SNSMessage, StackEvent). Adapters — store, eksaccess and the packages
// under internal/ — import this package; it imports no package of this
// module (internal/layout's import-rule test holds that).
package service

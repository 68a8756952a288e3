// Package eksaccess will hold the AWS adapter: assuming each customer's IAM
// role through STS with the team's ExternalId, and registering EKS clusters
// with access entries and access policies (FULL: cluster admin; LIMITED:
// edit in allowed namespaces). It implements interfaces declared in service.
package eksaccess

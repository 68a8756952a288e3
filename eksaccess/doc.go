// Package eksaccess is the AWS adapter: it assumes each customer's IAM role
// through STS with the team's ExternalId (Credentials), registers EKS
// clusters with access entries and access policies (AWS, implementing
// service.AWSAccess), and connects client-go to EKS clusters with
// short-lived tokens presigned by the assumed role (Connector, chosen beside
// the static connector by ByKind).
//
// AWS endpoints come only from the SDK's standard configuration
// (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL_EKS,
// AWS_ENDPOINT_URL_CLOUDFORMATION, ...), so tests point the same code at
// fakes without special flags.
package eksaccess

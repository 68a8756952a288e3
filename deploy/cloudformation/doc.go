// Package cloudformation holds the CloudFormation template customers deploy
// to let Kukie in (kukie-access.yaml, template v5) and the test that reads
// it as a plain YAML document and checks, level by level, that the role's
// policy allows exactly the calls the server makes and nothing wider.
// docs/aws-permissions.md explains each permission.
package cloudformation

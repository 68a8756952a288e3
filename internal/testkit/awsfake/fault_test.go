package awsfake_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

func TestClearFaultsFor(t *testing.T) {
	f, client, _ := eksFixture(t, awsfake.LevelFull)
	other := "arn:aws:iam::" + customer + ":role/Other"
	f.FailWith(awsfake.OpDescribeCluster, awsfake.Fault{Times: awsfake.Always, Code: "ServerException", Status: 500, Principal: roleARN})
	f.FailWith(awsfake.OpDescribeCluster, awsfake.Fault{Times: awsfake.Always, Code: "ThrottlingException", Status: 429, Principal: other})
	_, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")})
	apiError(t, err, "ServerException", http.StatusInternalServerError)

	f.ClearFaultsFor(other) // another role's: this one's stays
	_, err = client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")})
	apiError(t, err, "ServerException", http.StatusInternalServerError)

	f.ClearFaultsFor(roleARN)
	if _, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")}); err != nil {
		t.Errorf("after clearing the role's faults: %v", err)
	}
}

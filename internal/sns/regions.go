package sns

// knownRegions are the regions of each supported partition that the AWS
// SDK for Go v2 (github.com/aws/aws-sdk-go-v2, internal/endpoints/awsrulesfn
// partitions.json) lists: the only regions whose SNS host a certificate or
// confirmation is fetched from, so a forged TopicArn cannot send the
// process to look up a made-up sns.<region> name. A region AWS opens
// after the pinned SDK version is refused until the SDK is updated;
// TestKnownRegionsAreTheSDKs compares this list with the SDK's data.
var knownRegions = map[string]map[string]bool{
	"aws": set("af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
		"ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
		"ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1",
		"eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3",
		"il-central-1", "me-central-1", "me-south-1", "me-west-1", "mx-central-1", "sa-east-1", "sa-west-1",
		"us-east-1", "us-east-2", "us-west-1", "us-west-2"),
	"aws-cn":     set("cn-north-1", "cn-northwest-1"),
	"aws-us-gov": set("us-gov-east-1", "us-gov-west-1"),
}

func set(items ...string) map[string]bool {
	s := make(map[string]bool, len(items))
	for _, it := range items {
		s[it] = true
	}
	return s
}

// regionInPartition reports whether region is a known region of partition.
func regionInPartition(region, partition string) bool {
	return knownRegions[partition][region]
}

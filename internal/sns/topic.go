package sns

import (
	"regexp"
	"strings"
)

// Topic is an SNS topic named by an ARN
// arn:<partition>:sns:<region>:<account>:<name>.
type Topic struct {
	Partition string
	Region    string
	Account   string
	Name      string
}

var (
	regionPattern    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	accountPattern   = regexp.MustCompile(`^[0-9]{12}$`)
	topicNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}(\.fifo)?$`)
)

// partitionDomain is the DNS suffix of SNS endpoints per supported
// partition; a partition missing here has no trusted certificate host.
var partitionDomain = map[string]string{
	"aws":        "amazonaws.com",
	"aws-cn":     "amazonaws.com.cn",
	"aws-us-gov": "amazonaws.com",
}

// ParseTopicARN parses an SNS topic ARN of a supported partition (aws,
// aws-cn, aws-us-gov) whose region is one the AWS SDK knows in that
// partition (knownRegions). It fails with ErrMalformed.
func ParseTopicARN(arn string) (Topic, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sns" {
		return Topic{}, malformed(ReasonTopicARN, "TopicArn is not an SNS topic ARN")
	}
	t := Topic{Partition: parts[1], Region: parts[3], Account: parts[4], Name: parts[5]}
	if _, ok := partitionDomain[t.Partition]; !ok {
		return Topic{}, malformed(ReasonTopicARN, "TopicArn partition is not supported")
	}
	if !regionPattern.MatchString(t.Region) || !regionInPartition(t.Region, t.Partition) {
		return Topic{}, malformed(ReasonTopicARN, "TopicArn region is not a known region of its partition")
	}
	if !accountPattern.MatchString(t.Account) {
		return Topic{}, malformed(ReasonTopicARN, "TopicArn account is not 12 digits")
	}
	if !topicNamePattern.MatchString(t.Name) {
		return Topic{}, malformed(ReasonTopicARN, "TopicArn name is not a topic name")
	}
	return t, nil
}

// SNSHost is the topic's regional SNS endpoint, the only host trusted for
// its signing certificate and subscription confirmation:
// sns.<region>.amazonaws.com (sns.<region>.amazonaws.com.cn in aws-cn).
func (t Topic) SNSHost() string {
	return "sns." + t.Region + "." + partitionDomain[t.Partition]
}

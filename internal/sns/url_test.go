package sns

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

const testCertFile = "SimpleNotificationService-0123456789abcdef0123456789abcdef.pem"

// badCertURLs are certificate URLs CheckCertURL must refuse for testTopic,
// including the bypasses of weak validators.
var badCertURLs = []struct{ name, url string }{
	{"ErrEmpty", ""},
	{"ErrOtherHost", "https://evil.example/" + testCertFile},
	{"ErrLookAlikeSuffix", "https://sns.us-east-1.amazonaws.com.evil.example/" + testCertFile},
	{"ErrLookAlikePrefix", "https://evilsns.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrS3", "https://s3.amazonaws.com/" + testCertFile},
	{"ErrS3BucketHost", "https://sns.s3-us-east-1.amazonaws.com/" + testCertFile},
	{"ErrS3GlobalBucketHost", "https://sns.s3.amazonaws.com/" + testCertFile},
	{"ErrGlobalHost", "https://sns.amazonaws.com/" + testCertFile},
	{"ErrHTTP", "http://sns.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrSchemeUppercase", "HTTPS://sns.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrOtherRegion", "https://sns.us-west-2.amazonaws.com/" + testCertFile},
	{"ErrChinaDomainForAWSTopic", "https://sns.us-east-1.amazonaws.com.cn/" + testCertFile},
	{"ErrUserinfo", "https://user@sns.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrUserinfoHostInName", "https://sns.us-east-1.amazonaws.com@evil.example/" + testCertFile},
	{"ErrPort", "https://sns.us-east-1.amazonaws.com:443/" + testCertFile},
	{"ErrEmptyPort", "https://sns.us-east-1.amazonaws.com:/" + testCertFile},
	{"ErrTrailingDot", "https://sns.us-east-1.amazonaws.com./" + testCertFile},
	{"ErrUppercaseHost", "https://SNS.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrQuery", "https://sns.us-east-1.amazonaws.com/" + testCertFile + "?x=1"},
	{"ErrEmptyQuery", "https://sns.us-east-1.amazonaws.com/" + testCertFile + "?"},
	{"ErrFragment", "https://sns.us-east-1.amazonaws.com/" + testCertFile + "#x"},
	{"ErrEmptyFragment", "https://sns.us-east-1.amazonaws.com/" + testCertFile + "#"},
	{"ErrOtherFile", "https://sns.us-east-1.amazonaws.com/cert.pem"},
	{"ErrNoHex", "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-.pem"},
	{"ErrNotHex", "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-xyz.pem"},
	{"ErrSubdirectory", "https://sns.us-east-1.amazonaws.com/a/" + testCertFile},
	{"ErrDotSegments", "https://sns.us-east-1.amazonaws.com/x/../" + testCertFile},
	{"ErrDoubleSlash", "https://sns.us-east-1.amazonaws.com//" + testCertFile},
	{"ErrEscaped", "https://sns.us-east-1.amazonaws.com/%53impleNotificationService-0123456789abcdef.pem"},
	{"ErrBackslash", "https://sns.us-east-1.amazonaws.com\\@evil.example/" + testCertFile},
	{"ErrTrailingNewline", "https://sns.us-east-1.amazonaws.com/" + testCertFile + "\n"},
	{"ErrLeadingSpace", " https://sns.us-east-1.amazonaws.com/" + testCertFile},
	{"ErrNotPEM", "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.crt"},
}

func TestCheckCertURL(t *testing.T) {
	good := []struct{ name, url, topic string }{
		{"AWS", "https://sns.us-east-1.amazonaws.com/" + testCertFile, testTopic},
		{"AWSUppercaseHex", "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123456789ABCDEF.pem", testTopic},
		{"China", "https://sns.cn-north-1.amazonaws.com.cn/" + testCertFile, "arn:aws-cn:sns:cn-north-1:123456789012:t"},
		{"GovCloud", "https://sns.us-gov-west-1.amazonaws.com/" + testCertFile, "arn:aws-us-gov:sns:us-gov-west-1:123456789012:t"},
		{"FIFOTopic", "https://sns.eu-central-1.amazonaws.com/" + testCertFile, "arn:aws:sns:eu-central-1:123456789012:t.fifo"},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckCertURL(tt.url, tt.topic); err != nil {
				t.Errorf("CheckCertURL(%q, %q) = %v, want nil", tt.url, tt.topic, err)
			}
		})
	}
	for _, tt := range badCertURLs {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCertURL(tt.url, testTopic)
			if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonCertURL {
				t.Errorf("CheckCertURL(%q) = %v, want ErrRejected (cert_url)", tt.url, err)
			}
		})
	}
	t.Run("ErrAWSDomainForChinaTopic", func(t *testing.T) {
		err := CheckCertURL("https://sns.cn-north-1.amazonaws.com/"+testCertFile, "arn:aws-cn:sns:cn-north-1:123456789012:t")
		if !errors.Is(err, ErrRejected) {
			t.Errorf("CheckCertURL = %v, want ErrRejected", err)
		}
	})
	badTopics := []struct{ name, topic string }{
		{"ErrTopicEmpty", ""},
		{"ErrTopicNoName", "arn:aws:sns:us-east-1:123456789012"},
		{"ErrTopicRegionHost", "arn:aws:sns:evil.example/x:123456789012:t"},
		{"ErrTopicChinaRegionInAWS", "arn:aws:sns:cn-north-1:123456789012:t"},
		{"ErrTopicAWSRegionInChina", "arn:aws-cn:sns:us-east-1:123456789012:t"},
		{"ErrTopicName", "arn:aws:sns:us-east-1:123456789012:t/../"},
		// Well-formed, but no region the AWS SDK knows: its SNS host is
		// never looked up.
		{"ErrTopicUnknownRegion", "arn:aws:sns:us-east-9:123456789012:t"},
		{"ErrTopicMadeUpRegion", "arn:aws:sns:zz-nowhere-1:123456789012:t"},
		{"ErrTopicGlobalPseudoRegion", "arn:aws:sns:aws-global:123456789012:t"},
	}
	for _, tt := range badTopics {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCertURL("https://sns.us-east-1.amazonaws.com/"+testCertFile, tt.topic)
			if !errors.Is(err, ErrMalformed) || ReasonOf(err) != ReasonTopicARN {
				t.Errorf("CheckCertURL(topic %q) = %v, want ErrMalformed (topic_arn)", tt.topic, err)
			}
		})
	}
}

func TestParseTopicARN(t *testing.T) {
	got, err := ParseTopicARN("arn:aws-cn:sns:cn-northwest-1:123456789012:kukie_events-1")
	if err != nil {
		t.Fatalf("ParseTopicARN: %v", err)
	}
	want := Topic{Partition: "aws-cn", Region: "cn-northwest-1", Account: "123456789012", Name: "kukie_events-1"}
	if got != want {
		t.Errorf("ParseTopicARN = %+v, want %+v", got, want)
	}
	if host := got.SNSHost(); host != "sns.cn-northwest-1.amazonaws.com.cn" {
		t.Errorf("SNSHost = %q", host)
	}
}

func TestSubscribeURLAllowed(t *testing.T) {
	query := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	ok := query("Action", "ConfirmSubscription", "TopicArn", testTopic, "Token", testToken)
	good := []struct{ name, url string }{
		{"AsSNSSendsIt", "https://" + testHost + "/?Action=ConfirmSubscription&TopicArn=" + testTopic + "&Token=" + testToken},
		{"Escaped", "https://" + testHost + "/?" + ok},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			m := confirmation(TypeSubscriptionConfirmation, testNow)
			m.SubscribeURL = tt.url
			if err := SubscribeURLAllowed(m); err != nil {
				t.Errorf("SubscribeURLAllowed(%q) = %v, want nil", tt.url, err)
			}
		})
	}
	bad := []struct{ name, url string }{
		{"ErrHTTP", "http://" + testHost + "/?" + ok},
		{"ErrOtherHost", "https://evil.example/?" + ok},
		{"ErrLookAlikeSuffix", "https://" + testHost + ".evil.example/?" + ok},
		{"ErrS3BucketHost", "https://sns.s3-us-east-1.amazonaws.com/?" + ok},
		{"ErrOtherRegion", "https://sns.us-west-2.amazonaws.com/?" + ok},
		{"ErrPort", "https://" + testHost + ":8443/?" + ok},
		{"ErrUserinfo", "https://u:p@" + testHost + "/?" + ok},
		{"ErrPath", "https://" + testHost + "/redirect?" + ok},
		{"ErrNoPath", "https://" + testHost + "?" + ok},
		{"ErrEscapedPath", "https://" + testHost + "/%2F?" + ok},
		{"ErrFragment", "https://" + testHost + "/?" + ok + "#x"},
		{"ErrOtherAction", "https://" + testHost + "/?" + query("Action", "Unsubscribe", "TopicArn", testTopic, "Token", testToken)},
		{"ErrOtherTopic", "https://" + testHost + "/?" + query("Action", "ConfirmSubscription", "TopicArn", testTopic+"-x", "Token", testToken)},
		{"ErrOtherToken", "https://" + testHost + "/?" + query("Action", "ConfirmSubscription", "TopicArn", testTopic, "Token", "x"+testToken)},
		{"ErrNoToken", "https://" + testHost + "/?" + query("Action", "ConfirmSubscription", "TopicArn", testTopic)},
		{"ErrExtraParameter", "https://" + testHost + "/?" + ok + "&Version=2010-03-31"},
		{"ErrDuplicateToken", "https://" + testHost + "/?" + ok + "&Token=" + testToken},
		{"ErrSemicolon", "https://" + testHost + "/?" + ok + ";x=1"},
		{"ErrSpace", "https://" + testHost + "/?" + ok + " "},
		{"ErrNotURL", "::"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			m := confirmation(TypeSubscriptionConfirmation, testNow)
			m.SubscribeURL = tt.url
			err := SubscribeURLAllowed(m)
			if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonSubscribeURL {
				t.Errorf("SubscribeURLAllowed(%q) = %v, want ErrRejected (subscribe_url)", tt.url, err)
			}
		})
	}
	t.Run("ErrNotSubscriptionConfirmation", func(t *testing.T) {
		m := confirmation(TypeUnsubscribeConfirmation, testNow)
		if err := SubscribeURLAllowed(m); !errors.Is(err, ErrRejected) {
			t.Errorf("SubscribeURLAllowed = %v, want ErrRejected", err)
		}
	})
}

// FuzzCheckCertURL: whatever CheckCertURL accepts, Go's URL parser reads as
// a .pem file at the root of the topic's SNS host and nothing more.
func FuzzCheckCertURL(f *testing.F) {
	for _, tt := range badCertURLs {
		f.Add(tt.url)
	}
	f.Add("https://" + testHost + "/" + testCertFile)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > maxFuzzInput {
			return
		}
		if CheckCertURL(raw, testTopic) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		if u.Scheme != "https" || u.Host != testHost || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
			u.Fragment != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/SimpleNotificationService-") ||
			strings.Count(u.Path, "/") != 1 || u.RawPath != "" {
			t.Fatalf("accepted %q = %#v", raw, u)
		}
	})
}

package sns

import (
	"net/url"
	"regexp"
	"strings"
)

var certFilePattern = regexp.MustCompile(`^SimpleNotificationService-[0-9a-fA-F]{1,128}\.pem$`)

// CheckCertURL accepts only
// https://sns.<region>.<domain>/SimpleNotificationService-<hex>.pem with the
// region and partition of topicARN: no other host (S3 buckets and look-alike
// suffixes included), scheme, userinfo, port, query or fragment. It fails
// with ErrRejected, or ErrMalformed if topicARN does not parse.
func CheckCertURL(raw, topicARN string) error {
	t, err := ParseTopicARN(topicARN)
	if err != nil {
		return err
	}
	// Matching the whole string, rather than the parts url.Parse yields,
	// leaves no room for parser differences: the rest after the host
	// prefix is letters, digits, '-' and '.' only.
	prefix := "https://" + t.SNSHost() + "/"
	file, ok := strings.CutPrefix(raw, prefix)
	if !ok || !certFilePattern.MatchString(file) {
		return rejected(ReasonCertURL, "SigningCertURL is not a certificate on "+t.SNSHost())
	}
	return nil
}

// SubscribeURLAllowed accepts the SubscribeURL of a SubscriptionConfirmation
// only if fetching it can do nothing but confirm this subscription: https on
// the topic's SNS host (as CheckCertURL), path "/", and a query of exactly
// Action=ConfirmSubscription and the message's own TopicArn and Token. It
// fails with ErrRejected, or ErrMalformed if the TopicArn does not parse.
func SubscribeURLAllowed(m Message) error {
	if m.Type != TypeSubscriptionConfirmation {
		return rejected(ReasonSubscribeURL, "only a SubscriptionConfirmation is confirmed")
	}
	t, err := ParseTopicARN(m.TopicARN)
	if err != nil {
		return err
	}
	bad := func(why string) error { return rejected(ReasonSubscribeURL, "SubscribeURL "+why) }
	for _, r := range m.SubscribeURL {
		if r <= ' ' || r >= 0x7f || r == '\\' || r == '#' {
			return bad("holds characters a confirmation URL never has")
		}
	}
	u, err := url.Parse(m.SubscribeURL)
	if err != nil {
		return bad("does not parse")
	}
	if u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Host != t.SNSHost() {
		return bad("is not https on " + t.SNSHost())
	}
	if u.Path != "/" || u.RawPath != "" {
		return bad("path is not /")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("query does not parse")
	}
	want := map[string]string{
		"Action":   "ConfirmSubscription",
		"TopicArn": m.TopicARN,
		"Token":    m.Token,
	}
	if len(q) != len(want) {
		return bad("query is not exactly Action, TopicArn and Token")
	}
	for k, v := range want {
		if len(q[k]) != 1 || q[k][0] != v || v == "" {
			return bad("query " + k + " is not this subscription's")
		}
	}
	return nil
}

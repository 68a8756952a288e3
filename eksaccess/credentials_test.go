package eksaccess

import (
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kukie/gitops-server/service"
)

var validSessionName = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)

func TestSessionName(t *testing.T) {
	for _, tc := range []struct{ name, prefix, key string }{
		{"Default", "kukie", "0f6c1d3e-team-external-id"},
		{"PrefixWithInvalidCharacters", "ku kie/팀:prod", "ext"},
		{"LongPrefix", strings.Repeat("p", 200), "ext"},
		{"EmptyPrefix", "", "ext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SessionName(tc.prefix, tc.key)
			if !validSessionName.MatchString(got) {
				t.Errorf("SessionName = %q, not 2–64 characters of [\\w+=,.@-]", got)
			}
			if again := SessionName(tc.prefix, tc.key); again != got {
				t.Errorf("not stable: %q then %q", got, again)
			}
			if other := SessionName(tc.prefix, tc.key+"x"); other == got {
				t.Errorf("two teams share the session name %q", got)
			}
		})
	}
	if got := SessionName("kukie", "ext"); !strings.HasPrefix(got, "kukie-") || strings.Contains(got, "ext") {
		t.Errorf("SessionName = %q, want kukie-<hash>", got)
	}
}

func TestSanitizeSessionName(t *testing.T) {
	for in, want := range map[string]string{
		"kukie-abc":                   "kukie-abc",
		"a b/c":                       "a-b-c",
		"팀":                           "kukie",
		"":                            "kukie",
		"x":                           "kukie",
		"ok+=,.@-_":                   "ok+=,.@-_",
		strings.Repeat("z", 70):       strings.Repeat("z", 64),
		"팀" + strings.Repeat("y", 70): "-" + strings.Repeat("y", 63),
	} {
		if got := sanitizeSessionName(in); got != want {
			t.Errorf("sanitizeSessionName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPartitionOf(t *testing.T) {
	for region, want := range map[string]string{"us-east-1": "aws", "ap-northeast-2": "aws", "cn-north-1": "aws-cn",
		"us-gov-west-1": "aws-us-gov", "us-iso-east-1": "aws-iso", "us-isob-east-1": "aws-iso-b"} {
		if got := PartitionOf(region); got != want {
			t.Errorf("PartitionOf(%s) = %s, want %s", region, got, want)
		}
	}
}

func TestCredentialsProvider(t *testing.T) {
	creds, err := NewCredentials(aws.Config{Region: "us-east-1"}, CredentialsOptions{MaxRoles: 2})
	if err != nil {
		t.Fatal(err)
	}
	const role = "arn:aws:iam::111122223333:role/path/kukie-access"
	a, err := creds.Provider(role, "ext-1")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := creds.Provider(role, "ext-1"); b != a {
		t.Error("the same role and ExternalId got a second provider")
	}
	if c, _ := creds.Provider(role, "ext-2"); c == a {
		t.Error("another team's ExternalId shared the provider")
	}
	for _, bad := range []string{"arn:aws-cn:iam::111122223333:role/kukie", "arn:aws:iam::111122223333:user/x", "nonsense"} {
		if _, err := creds.Provider(bad, "ext-1"); service.ErrorCode(err) != service.EVALIDATION ||
			service.ErrorReason(err) != reasonAssumeRoleDenied {
			t.Errorf("Provider(%q) = %v, want EVALIDATION %s", bad, err, reasonAssumeRoleDenied)
		}
	}
}

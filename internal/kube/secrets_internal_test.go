package kube

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/kukie/gitops-server/service"
)

// A cluster secret list keeps each secret's name and server and nothing
// else: config (bearer tokens, role ARNs) is skipped as it streams by.
func TestDecodeSecretItems(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	body := `{"kind":"SecretList","metadata":{"continue":"next"},"items":[
		{"metadata":{"name":"a"},"data":{"config":"` + b64(`{"bearerToken":"secret-token"}`) + `","name":"` + b64("spoke") +
		`","server":"` + b64("https://spoke.example:443") + `"}},
		{"metadata":{"name":"no-server"},"data":{"name":"` + b64("x") + `"}},
		{"metadata":{"name":"odd"},"data":{"name":7,"server":"not base64 !"}},
		{"metadata":{"name":"in"},"data":null,"type":"Opaque"}]}`
	var refs []service.ArgoCDClusterRef
	token, err := decodePage(strings.NewReader(body), func(jd *jsontext.Decoder) error { return decodeSecretItems(jd, &refs) })
	if err != nil || token != "next" {
		t.Fatalf("token %q, err %v", token, err)
	}
	if len(refs) != 1 || refs[0] != (service.ArgoCDClusterRef{Name: "spoke", Server: "https://spoke.example:443"}) {
		t.Errorf("refs = %+v", refs)
	}
	if _, err := decodePage(strings.NewReader(`{"items":{}}`), func(jd *jsontext.Decoder) error { return decodeSecretItems(jd, &refs) }); err == nil {
		t.Error("items that are not a list must fail the read")
	}
}

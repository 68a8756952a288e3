package kube

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// A page's items are decoded one by one: an item that is no usable
// Application is skipped; a response that is not a list fails the read.
func TestDecodePage(t *testing.T) {
	const app = `{"metadata":{"name":"%s","namespace":"argocd"}}`
	cases := map[string]struct {
		body  string
		names []string
		token string
		err   bool
	}{
		"OddItemsSkipped": {body: `{"apiVersion":"argoproj.io/v1alpha1","items":[` + strings.ReplaceAll(app, "%s", "a") +
			`,"junk",{"metadata":{"name":7}},[1],` + strings.ReplaceAll(app, "%s", "b") + `],"kind":"ApplicationList",
			"metadata":{"continue":"next","resourceVersion":"9"}}`, names: []string{"a", "b"}, token: "next"},
		"NullItems":    {body: `{"items":null,"metadata":{}}`},
		"NotAList":     {body: `[1]`, err: true},
		"ItemsNotList": {body: `{"items":{}}`, err: true},
		"Truncated":    {body: `{"items":[` + strings.ReplaceAll(app, "%s", "a") + `,{"metadata":`, err: true},
		"Empty":        {body: ``, err: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dec, apps := argocd.NewApplicationDecoder("argocd", nil), []service.Application(nil)
			token, err := decodePage(strings.NewReader(c.body), func(jd *jsontext.Decoder) (err error) {
				apps, err = decodeItems(jd, dec, apps)
				return err
			})
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if c.err {
				return
			}
			var names []string
			for _, a := range apps {
				names = append(names, a.Name)
			}
			if strings.Join(names, ",") != strings.Join(c.names, ",") || token != c.token {
				t.Errorf("apps %v, token %q; want %v, %q", names, token, c.names, c.token)
			}
		})
	}
}

package mask

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// A lazy masker masks as an eager one once built; one that cannot be
// built never shows content: the marker alone, every value masked.
func TestLazyMasker(t *testing.T) {
	secret := []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: hunter2-very-secret}\n")
	eager, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Lazy().Manifests(secret), eager.Manifests(secret); !bytes.Equal(got.Content, want.Content) || got.Masked != want.Masked {
		t.Errorf("lazy %q, eager %q", got.Content, want.Content)
	}
	broken := &Masker{load: func() (*scanner, error) { return nil, errors.New("no rules") }}
	for _, r := range []Result{broken.Manifests(secret), broken.File("values.yaml", []byte("image: nginx\n"))} {
		if string(r.Content) != Marker+"\n" || r.Masked != 1 {
			t.Errorf("a masker that cannot load showed %q", r.Content)
		}
	}
	if !broken.MasksValue("apps", "Deployment", "/spec/replicas", json.RawMessage("3")) {
		t.Error("a masker that cannot load judged a value safe to show")
	}
}

package mask_test

import (
	"bytes"
	"os"
	"testing"
)

// benchYAML returns about 100 KB of rendered manifests: the Deployment,
// ConfigMap and Secret fixtures repeated.
func benchYAML(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	for buf.Len() < 100*1024 {
		for _, f := range []string{"deployment.yaml", "configmap.yaml", "secret.yaml"} {
			c, err := os.ReadFile("testdata/" + f)
			if err != nil {
				b.Fatal(err)
			}
			buf.WriteString("---\n")
			buf.Write(c)
		}
	}
	return buf.Bytes()
}

func BenchmarkManifests100KB(b *testing.B) {
	m := MustNew(b)
	in := benchYAML(b)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		m.Manifests(in)
	}
}

func BenchmarkFileLines100KB(b *testing.B) {
	m := MustNew(b)
	in := benchYAML(b)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		m.File("templates/all.tpl", in)
	}
}

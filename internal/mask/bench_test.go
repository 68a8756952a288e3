package mask_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/kukie/gitops-server/internal/mask"
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

// benchRedactions returns n values like a large rendered Secret's.
func benchRedactions(n int) mask.Redactions {
	r := make(mask.Redactions, 0, n)
	for i := range n {
		r = append(r, fmt.Sprintf("secret%07d", i))
	}
	return r
}

// benchNote is a line a request cuts its redaction set from.
const benchNote = "# https://git.example.com/org/repo apps/web @ 0123abcd (Helm)"

// BenchmarkRedactorRedact is the cost of cutting a compiled set from one
// line: what a request pays per note, error and tool line.
func BenchmarkRedactorRedact(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		r := benchRedactions(n).Compile()
		r.Redact(benchNote) // built on first use
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				r.Redact(benchNote)
			}
		})
	}
}

// BenchmarkRedactionsCompile is the cost of compiling a set, paid once
// per render (the set is cached with it).
func BenchmarkRedactionsCompile(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		r := benchRedactions(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				r.Compile().Redact(benchNote)
			}
		})
	}
}

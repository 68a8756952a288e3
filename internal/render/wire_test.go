package render

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWireRoundTrip(t *testing.T) {
	req := Request{
		Files: map[string][]byte{"app/a.yaml": []byte("kind: A\n"), "app/empty": {}, "bin": {0, 1, 2, 0xff}},
		RefFiles: map[string]map[string][]byte{
			"values": {"prod.yaml": []byte("x: 1\n")},
			"other":  {"o.yaml": []byte("y: 2\n")},
		},
		Source:  Source{Path: "app", Helm: &Helm{ValueFiles: []string{"$values/prod.yaml"}}},
		AppName: "shop", Namespace: "shop", KubeVersion: "v1.37.2", APIVersions: []string{"apps/v1"},
		KustomizeBuildOptions: "--enable-helm",
	}
	var buf bytes.Buffer
	if err := WriteRequest(&buf, req); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("round trip (-sent +read):\n%s", diff)
	}
	t.Run("NoFiles", func(t *testing.T) {
		var buf bytes.Buffer
		if err := WriteRequest(&buf, Request{Source: Source{Path: "x"}}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadRequest(&buf)
		if err != nil || got.Source.Path != "x" || len(got.Files) != 0 || got.RefFiles != nil {
			t.Fatalf("read %+v, %v", got, err)
		}
	})
}

// stream builds a request stream by hand: magic, header length, header,
// body.
func stream(magic, header string, body string) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(header)))
	b.WriteString(header)
	b.WriteString(body)
	return b.Bytes()
}

func TestWireRefusesMalformedStreams(t *testing.T) {
	var good bytes.Buffer
	if err := WriteRequest(&good, Request{Files: map[string][]byte{"a": []byte("hello"), "b": []byte("world")}}); err != nil {
		t.Fatal(err)
	}
	whole := good.Bytes()
	tests := map[string][]byte{
		"Empty":            nil,
		"ShortStart":       []byte("KUKIE"),
		"WrongMagic":       stream("KUKIERQ0", `{"files":[]}`, ""),
		"OldJSONRequest":   []byte(`{"files":{"a":"aGVsbG8="},"source":{}}`),
		"HeaderTooLarge":   append([]byte(wireMagic), 0xff, 0xff, 0xff, 0xff),
		"TruncatedHeader":  whole[:len(wireMagic)+4+3],
		"HeaderNotJSON":    stream(wireMagic, `{"files":[`, ""),
		"TruncatedFile":    whole[:len(whole)-3],
		"TrailingBytes":    append(bytes.Clone(whole), 'x'),
		"NegativeSize":     stream(wireMagic, `{"files":[{"name":"a","size":-1}]}`, ""),
		"SizesBeyondCap":   stream(wireMagic, `{"files":[{"name":"a","size":1073741824},{"name":"b","size":1}]}`, "x"),
		"HugeClaimNoBytes": stream(wireMagic, `{"files":[{"name":"a","size":9223372036854775807}]}`, ""),
		"DuplicateName":    stream(wireMagic, `{"files":[{"name":"a","size":1},{"name":"a","size":1}]}`, "xy"),
		"EmptyName":        stream(wireMagic, `{"files":[{"name":"","size":1}]}`, "x"),
		"NULInName":        stream(wireMagic, `{"files":[{"name":"a\u0000b","size":1}]}`, "x"),
		"DuplicateRefName": stream(wireMagic, `{"files":[{"ref":"v","name":"a","size":1},{"ref":"v","name":"a","size":1}]}`, "xy"),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadRequest(bytes.NewReader(in)); !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("ReadRequest = %v, want ErrMalformedRequest", err)
			}
		})
	}
	t.Run("SameNameInTwoTrees", func(t *testing.T) {
		in := stream(wireMagic, `{"files":[{"name":"a","size":1},{"ref":"v","name":"a","size":1}]}`, "xy")
		req, err := ReadRequest(bytes.NewReader(in))
		if err != nil || string(req.Files["a"]) != "x" || string(req.RefFiles["v"]["a"]) != "y" {
			t.Fatalf("read %+v, %v", req, err)
		}
	})
}

// The parent writes the tree from its own slices: encoding a 64 MiB tree
// allocates a small fraction of it (the JSON encoding it replaced
// allocated the base64 copy and more, over 85 MiB).
func TestWireWritesWithoutCopyingTheTree(t *testing.T) {
	files := map[string][]byte{}
	for i := range 64 {
		files[string(rune('a'+i%26))+string(rune('a'+i/26))+".yaml"] = bytes.Repeat([]byte{'x'}, 1<<20)
	}
	for i := range 1000 { // small files go through the buffer
		files["small/"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))] = []byte("kind: ConfigMap\n")
	}
	req := Request{Files: files, Source: Source{Path: "small"}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := WriteRequest(io.Discard, req); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 {
		t.Errorf("writing a 64 MiB tree allocated %d bytes; want under 2 MiB (no copy of the tree)", got)
	}
}

func TestWireRefusesTreesBeyondTheCaps(t *testing.T) {
	// Many names are cheap; sizes beyond the cap need no real bytes when
	// the same slice is shared.
	big := make([]byte, 256<<20)
	req := Request{Files: map[string][]byte{"a": big, "b": big, "c": big, "d": big, "e": big}}
	if err := WriteRequest(io.Discard, req); err == nil {
		t.Fatal("a 1.25 GiB request was written")
	}
}

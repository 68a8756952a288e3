package helmrepo_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/helmrepo"
	"github.com/kukie/gitops-server/service"
)

// tarEntry is one tar header for tarballEntries; Body is written for regular files.
type tarEntry struct {
	Name     string
	Type     byte
	Linkname string
	Body     string
}

func tarballEntries(tb testing.TB, entries []tarEntry) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Linkname, Mode: 0o644}
		if e.Type == tar.TypeXGlobalHeader {
			hdr = &tar.Header{Name: e.Name, Typeflag: e.Type, PAXRecords: map[string]string{"comment": "git archive"}}
		}
		if e.Type == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatal(err)
		}
		if e.Type == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// tarball archives regular files in name order.
func tarball(tb testing.TB, files map[string]string) []byte {
	tb.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]tarEntry, 0, len(names))
	for _, n := range names {
		entries = append(entries, tarEntry{Name: n, Type: tar.TypeReg, Body: files[n]})
	}
	return tarballEntries(tb, entries)
}

func TestExtract(t *testing.T) {
	chartYAML := tarEntry{Name: "mychart/Chart.yaml", Type: tar.TypeReg, Body: "name: mychart\n"}
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    map[string]string // nil: refused with render_failed
	}{
		{name: "DirectoriesAndPaxHeaders", entries: []tarEntry{
			{Name: "./", Type: tar.TypeDir},
			{Name: "mychart/", Type: tar.TypeDir},
			{Name: "pax_global_header", Type: tar.TypeXGlobalHeader},
			chartYAML,
			{Name: "./mychart/templates/a.yaml", Type: tar.TypeReg, Body: "a"},
		}, want: map[string]string{"web/Chart.yaml": "name: mychart\n", "web/templates/a.yaml": "a"}},
		{name: "ErrParentPath", entries: []tarEntry{chartYAML, {Name: "mychart/../../etc/passwd", Type: tar.TypeReg, Body: "x"}}},
		{name: "ErrParentPathInside", entries: []tarEntry{chartYAML, {Name: "mychart/templates/../x", Type: tar.TypeReg, Body: "x"}}},
		{name: "ErrAbsolutePath", entries: []tarEntry{{Name: "/etc/passwd", Type: tar.TypeReg, Body: "x"}}},
		{name: "ErrSymlink", entries: []tarEntry{chartYAML, {Name: "mychart/values.yaml", Type: tar.TypeSymlink, Linkname: "/proc/self/environ"}}},
		{name: "ErrHardLink", entries: []tarEntry{chartYAML, {Name: "mychart/values.yaml", Type: tar.TypeLink, Linkname: "mychart/Chart.yaml"}}},
		{name: "ErrDevice", entries: []tarEntry{chartYAML, {Name: "mychart/dev", Type: tar.TypeChar}}},
		{name: "ErrFifo", entries: []tarEntry{chartYAML, {Name: "mychart/fifo", Type: tar.TypeFifo}}},
		{name: "ErrTwoTopDirectories", entries: []tarEntry{chartYAML, {Name: "other/x.yaml", Type: tar.TypeReg, Body: "x"}}},
		{name: "ErrFileAtTop", entries: []tarEntry{{Name: "Chart.yaml", Type: tar.TypeReg, Body: "x"}}},
		{name: "ErrEmpty", entries: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := helmrepo.Extract(tarballEntries(t, tc.entries), "web")
			if tc.want == nil {
				if service.ErrorCode(err) != service.EVALIDATION || service.ErrorReason(err) != service.ReasonRenderFailed {
					t.Fatalf("err = %v, want render_failed; files %v", err, keys(files))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range files {
				got[k] = string(v)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

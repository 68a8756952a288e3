package helmrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Limits on an extracted chart.
type limits struct {
	maxBytes int64 // all files together
	maxFiles int
}

// extract reads a chart .tgz into files keyed "<chart>/<path>": the
// archive's top directory (whatever its name) is replaced by chart. Absolute
// paths, "..", links, devices and files outside one top directory are
// refused, as are archives over the limits.
func extract(archive []byte, chart string, lim limits) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, badArchive("The chart archive is not gzip-compressed.", err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var total int64
	top := ""
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badArchive("The chart archive is not a valid tar file.", err)
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		default:
			return nil, badArchive(fmt.Sprintf("The chart archive holds %q, which is not a regular file or directory (links and devices are refused).", hdr.Name), nil)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		} else if first != top {
			return nil, badArchive(fmt.Sprintf("The chart archive holds %q outside its top directory %q.", hdr.Name, top), nil)
		}
		if rest == "" {
			return nil, badArchive(fmt.Sprintf("The chart archive holds %q outside a chart directory.", hdr.Name), nil)
		}
		if len(files) >= lim.maxFiles {
			return nil, badArchive(fmt.Sprintf("The chart archive holds more than %d files.", lim.maxFiles), nil)
		}
		if hdr.Size < 0 || hdr.Size > lim.maxBytes-total {
			return nil, badArchive(fmt.Sprintf("The chart is larger than %d bytes once extracted.", lim.maxBytes), nil)
		}
		body, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, badArchive("The chart archive is truncated.", err)
		}
		total += int64(len(body))
		files[chart+"/"+rest] = body
	}
	if len(files) == 0 {
		return nil, badArchive("The chart archive holds no files.", nil)
	}
	return files, nil
}

// entryName returns a tar entry's name cleaned, refusing absolute paths and
// ".." elements.
func entryName(raw string) (string, error) {
	if raw == "" || strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") || strings.ContainsRune(raw, 0) {
		return "", badArchive(fmt.Sprintf("The chart archive holds an unsafe path %q.", raw), nil)
	}
	for _, el := range strings.Split(raw, "/") {
		if el == ".." {
			return "", badArchive(fmt.Sprintf("The chart archive holds an unsafe path %q.", raw), nil)
		}
	}
	return path.Clean(raw), nil
}

package service

import (
	"context"
	"strings"
	"testing"
)

type fakeFetcher struct {
	files map[string][]byte
	err   error
}

func (f fakeFetcher) Resolve(_ context.Context, _ Cluster, ref string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	if ref == "missing" {
		return "", ReasonError(ENOTFOUND, ReasonRefNotFound, "No ref missing.")
	}
	return "0123456789abcdef0123", nil
}

func (f fakeFetcher) Tree(context.Context, Cluster, string, string) (map[string][]byte, error) {
	return f.files, nil
}

// upperMasker "masks" by replacing a planted word, and counts its scans.
type upperMasker struct{ scans *int }

func (m upperMasker) File(_ string, b []byte) MaskedText {
	if m.scans != nil {
		*m.scans++
	}
	return maskHunter(b)
}

func (upperMasker) Redactor(secrets []string, join ...Redactor) Redactor {
	return maskAll{}.Redactor(secrets, join...)
}

func repoView(c Cluster, f RepoFetcher) *RepoView {
	return &RepoView{Clusters: &oneCluster{c: c}, Fetcher: f, Masker: upperMasker{}}
}

func TestRepoView(t *testing.T) {
	c := Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessLimited, GitOpsRepo: "https://github.com/org/gitops"}
	files := map[string][]byte{"apps/web/values.yaml": []byte("password: hunter2\n"), "bin/logo.png": {0x89, 'P', 'N', 'G', 0, 1}}
	v := repoView(c, fakeFetcher{files: files})
	p := Principal{TeamID: "t1"}
	ctx := context.Background()

	tree, err := v.Tree(ctx, p, "c1", "", "")
	if err != nil || tree.AppsUnavailable != "limited_access" || len(tree.Folders) != 4 || tree.Commit == "" {
		t.Fatalf("tree = %+v, %v", tree, err)
	}
	f, err := v.File(ctx, p, "c1", "/apps/web/values.yaml", "main")
	if err != nil || f.Content != "password: <masked>\n" || f.Binary || f.Path != "apps/web/values.yaml" {
		t.Errorf("file = %+v, %v", f, err)
	}
	// A warm answer does no scanning: the masked file is cached.
	scans := 0
	v.Masker = upperMasker{scans: &scans}
	for range 3 {
		if f, err := v.File(ctx, p, "c1", "apps/web/values.yaml", "main"); err != nil || f.Content != "password: <masked>\n" {
			t.Fatalf("warm file = %+v, %v", f, err)
		}
	}
	if scans != 0 {
		t.Errorf("%d scans for a cached file, want 0", scans)
	}
	if f, err := v.File(ctx, p, "c1", "bin/logo.png", ""); err != nil || !f.Binary || f.Content != "" || f.Size != 6 {
		t.Errorf("binary = %+v, %v", f, err)
	}
	for _, c := range []struct {
		path   string
		reason Reason
	}{
		{"nope.yaml", ReasonPathNotFound}, {"../etc/passwd", ""}, {"apps/../../x", ""},
	} {
		_, err := v.File(ctx, p, "c1", c.path, "")
		if c.reason != "" && ErrorReason(err) != c.reason || c.reason == "" && ErrorCode(err) != EVALIDATION {
			t.Errorf("File(%q) = %v", c.path, err)
		}
	}
	if _, err := v.File(ctx, p, "c1", "x", "missing"); ErrorReason(err) != ReasonRefNotFound {
		t.Errorf("missing ref: %v", err)
	}
	if _, err := v.Tree(ctx, Principal{TeamID: "t2"}, "c1", "", ""); ErrorCode(err) != ENOTFOUND {
		t.Errorf("another team's cluster: %v", err)
	}

	// The tools answer failures as text; tenancy stays an error.
	a, err := v.FileTool(ctx, p, "c1", "nope.yaml", "", "en")
	if err != nil || !strings.Contains(a.Text, "nope.yaml") {
		t.Errorf("tool for a missing file: %+v, %v", a, err)
	}
	if _, err := v.TreeTool(ctx, Principal{TeamID: "t2"}, "c1", "", "", "en"); ErrorCode(err) != ENOTFOUND {
		t.Errorf("tool on another team's cluster: %v", err)
	}
	unconnected := repoView(Cluster{ID: "c1", TeamID: "t1"}, fakeFetcher{files: files})
	if a, err := unconnected.TreeTool(ctx, p, "c1", "", "", "ko"); err != nil || a.Text != "레포를 연결하면 볼 수 있어요." {
		t.Errorf("unconnected tool: %+v, %v", a, err)
	}
	if _, err := unconnected.Tree(ctx, p, "c1", "", ""); ErrorReason(err) != ReasonRepoNotConnected {
		t.Errorf("unconnected tree: %v", err)
	}
	big := repoView(c, fakeFetcher{files: map[string][]byte{"big.yaml": []byte(strings.Repeat("키: 값\n", 10000))}})
	if a, err := big.FileTool(ctx, p, "c1", "big.yaml", "", "ko"); err != nil || !a.Truncated || len([]rune(a.Text)) > MaxToolText {
		t.Errorf("big file tool: truncated %v, %d code points, %v", a.Truncated, len([]rune(a.Text)), err)
	}
}

package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Bounds of the walk of a commit's tree, whatever the tree objects say: a
// few kilobytes of trees that name one another (a DAG) describe 2^n paths,
// and names of megabytes make paths that outweigh the files.
const (
	// maxPathBytes bounds one path, as PATH_MAX does: Argo CD and
	// Kubernetes manifests live at paths far shorter.
	maxPathBytes = 4096
	// maxPathDepth bounds how deep directories nest. maxPathBytes alone
	// allows 2,048 levels of one-letter names; no repository of manifests
	// comes near 256, and each level is a frame of the walk.
	maxPathDepth = 256
	// walkEntriesPerFile is how many entries (directories, submodules and
	// skipped names too) the walk visits per file allowed (MaxFiles).
	walkEntriesPerFile = 4
	// ctxCheckEvery is how many entries are walked between looks at the
	// context, so FetchTimeout stops a walk too.
	ctxCheckEvery = 1024
	// entryOverhead is what one entry of a Tree (map slot, string and slice
	// headers) is charged in Tree.Bytes on top of its path and content.
	entryOverhead = 64
)

// treeEntry is one entry of a tree object, as the walk reads it in place.
type treeEntry struct {
	mode filemode.FileMode
	name []byte
	hash plumbing.Hash
}

// treeCursor reads a tree object's entries one at a time from its bytes,
// never decoding the whole tree.
type treeCursor struct {
	data   []byte
	prefix string // the tree's path followed by "/", "" at the root
	depth  int
}

func (c *treeCursor) next() (treeEntry, bool, error) {
	if len(c.data) == 0 {
		return treeEntry{}, false, nil
	}
	sp := bytes.IndexByte(c.data, ' ')
	if sp < 0 {
		return treeEntry{}, false, errBadTree
	}
	m, err := strconv.ParseUint(string(c.data[:sp]), 8, 32)
	if err != nil {
		return treeEntry{}, false, errBadTree
	}
	rest := c.data[sp+1:]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 || len(rest) < nul+1+20 {
		return treeEntry{}, false, errBadTree
	}
	e := treeEntry{mode: filemode.FileMode(m), name: rest[:nul]}
	copy(e.hash[:], rest[nul+1:nul+21])
	c.data = rest[nul+21:]
	return e, true, nil
}

var errBadTree = fmt.Errorf("a malformed tree object")

// walkLimits bound one walk.
type walkLimits struct {
	entries int // every entry visited, of any kind
}

// walkTree visits every entry reachable from the tree root in tree order,
// depth first, with an explicit stack (its height is at most
// maxPathDepth): visit gets each non-directory entry's full path. It
// refuses past maxPathBytes, maxPathDepth or lim.entries entries visited
// (repo_too_large), stops when ctx ends, and reports a tree the store
// lacks or cannot parse as unreachable.
func walkTree(ctx context.Context, st *objectStore, root plumbing.Hash, lim walkLimits, visit func(path string, e treeEntry) error) error {
	data, ok := st.tree(root)
	if !ok {
		return unreachable("The server sent an incomplete commit.", nil)
	}
	stack := []*treeCursor{{data: data}}
	walked := 0
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		e, ok, err := top.next()
		if err != nil {
			return unreachable("The server sent a malformed tree.", err)
		}
		if !ok {
			stack = stack[:len(stack)-1]
			continue
		}
		walked++
		if walked > lim.entries {
			return tooLarge(fmt.Sprintf("The commit's tree has more than %d entries.", lim.entries))
		}
		if walked%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if len(top.prefix)+len(e.name) > maxPathBytes {
			return tooLarge(fmt.Sprintf("The commit has a path over %d bytes.", maxPathBytes))
		}
		path := top.prefix + string(e.name)
		if !fs.ValidPath(path) || bytes.IndexByte(e.name, '/') >= 0 {
			continue // ".", "..", empty or slashed names: never a path to expose, nor under one
		}
		if e.mode == filemode.Dir {
			if top.depth+1 >= maxPathDepth {
				return tooLarge(fmt.Sprintf("The commit's directories nest more than %d deep.", maxPathDepth))
			}
			sub, ok := st.tree(e.hash)
			if !ok {
				return unreachable("The server sent an incomplete tree.", nil)
			}
			stack = append(stack, &treeCursor{data: sub, prefix: path + "/", depth: top.depth + 1})
			continue
		}
		if err := visit(path, e); err != nil {
			return err
		}
	}
	return nil
}

package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// Render cache bounds (docs/operations.md, "Render bounds").
const (
	// DefaultRenderCacheBytes bounds the masked renders a replica keeps, all
	// teams together; one team keeps at most half of it.
	DefaultRenderCacheBytes = 256 << 20
	// MaxCachedRenderBytes is the largest render kept: 8 MiB holds the
	// largest charts seen in practice (CRD bundles of a few MiB) and keeps at
	// least 16 of them in a team's share; a larger one is rendered again on
	// each request, costing a slot and its time, not memory held.
	MaxCachedRenderBytes = 8 << 20
	// renderEntryOverhead counts an entry's bookkeeping beside its texts
	// (the list element, the map slot, the struct), so many tiny entries are
	// bounded too.
	renderEntryOverhead = 512
)

// cacheableRender reports whether the same inputs would give out again.
func cacheableRender(out RenderOutput) bool {
	switch out.Reason {
	case ReasonRenderTimeout, ReasonRenderMemory, ReasonRenderProcessFailed:
		return false
	}
	return true
}

// renderCache keeps masked renders by renderKey, bounded in bytes: at most
// budget in all and budget/2 per team. A team over its share loses its own
// least recently used renders; when the whole cache is over budget the team
// holding the most loses its least recently used one, so filling the cache
// never evicts a team holding less than the one filling it.
type renderCache struct {
	mu    sync.Mutex
	teams map[string]*teamRenders
	total int64

	flight singleflight.Group
}

// teamRenders is one team's renders, most recently used first.
type teamRenders struct {
	lru   *simplelru.LRU[string, cachedRender]
	bytes int64
}

type cachedRender struct {
	part SourceManifests
	size int64
}

// get returns team's render under key, marking it recently used.
func (c *renderCache) get(team, key string) (SourceManifests, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.teams[team]; t != nil {
		if hit, ok := t.lru.Get(key); ok {
			return hit.part, true
		}
	}
	return SourceManifests{}, false
}

// add keeps part under key for team within budget (<= 0: the default),
// evicting as the type says; it reports false for a render too large to keep.
func (c *renderCache) add(budget int64, team, key string, part SourceManifests) bool {
	if budget <= 0 {
		budget = DefaultRenderCacheBytes
	}
	share := budget / 2
	size := renderSize(key, part)
	if size > MaxCachedRenderBytes || size > share {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.teams == nil {
		c.teams = map[string]*teamRenders{}
	}
	t := c.teams[team]
	if t == nil {
		t = &teamRenders{}
		// Bytes bind first: share/overhead entries cannot exceed the share.
		t.lru, _ = simplelru.NewLRU(int(share/renderEntryOverhead)+1, func(_ string, v cachedRender) {
			t.bytes -= v.size
			c.total -= v.size
		})
		c.teams[team] = t
	}
	t.lru.Remove(key)
	for t.bytes+size > share {
		if _, _, ok := t.lru.RemoveOldest(); !ok {
			break
		}
	}
	for c.total+size > budget {
		if _, _, ok := c.largestTeam().lru.RemoveOldest(); !ok {
			break
		}
	}
	t.lru.Add(key, cachedRender{part: part, size: size})
	t.bytes += size
	c.total += size
	for name, other := range c.teams {
		if other.lru.Len() == 0 {
			delete(c.teams, name)
		}
	}
	return true
}

// largestTeam is the team holding the most bytes; under mu, with total > 0.
func (c *renderCache) largestTeam() *teamRenders {
	var largest *teamRenders
	for _, t := range c.teams {
		if largest == nil || t.bytes > largest.bytes {
			largest = t
		}
	}
	return largest
}

// held returns the bytes kept in all and by team (for tests and metrics).
func (c *renderCache) held() (total int64, byTeam map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byTeam = map[string]int64{}
	for name, t := range c.teams {
		byTeam[name] = t.bytes
	}
	return c.total, byTeam
}

// sizedRedactor is a Redactor that knows the memory it keeps (the mask
// package's compiled sets): the cache counts it with the render it belongs
// to, since a tenant decides how many values a render masks.
type sizedRedactor interface {
	Bytes() int64
}

// renderSize is what an entry keeps alive: its texts and its bookkeeping.
func renderSize(key string, p SourceManifests) int64 {
	n := renderEntryOverhead + len(key) + len(p.RepoURL) + len(p.Path) + len(p.Commit) + len(p.SourceType) + len(p.Manifests)
	for _, s := range p.Notes {
		n += 16 + len(s)
	}
	if r, ok := p.redactor.(sizedRedactor); ok {
		n += int(r.Bytes())
	}
	if p.Error != nil {
		n += len(p.Error.Code) + len(p.Error.Message)
	}
	return int64(n)
}

// refSources are the trees of an app's ref sources ("$values/..."), by
// ref name, and what identifies them in a render's key.
type refSources struct {
	files map[string]map[string][]byte
	// ids are "name repository commit" per ref source, in the app's order.
	ids []string
	// unread is set when a ref tree of the connected repository could not
	// be read: a render without it is not cached.
	unread bool
}

// refSources reads the trees of the app's ref sources in the connected
// repository (another repository's are not read: its value files are
// missing from the render).
func (s *RepoView) refSources(ctx context.Context, c Cluster, sources []AppSource, revisions []string) refSources {
	want := NormalizeRepoURL(c.GitOpsRepo)
	refs := refSources{files: map[string]map[string][]byte{}}
	for i, src := range sources {
		if src.Ref == "" {
			continue
		}
		repo, commit := NormalizeRepoURL(src.RepoURL), ""
		if repo == want {
			files, at, err := s.treeAt(ctx, c, src.TargetRevision, revisionAt(revisions, i))
			if err == nil {
				refs.files[src.Ref], commit = files, at
			} else {
				refs.unread = true
			}
		}
		refs.ids = append(refs.ids, src.Ref+" "+repo+" "+commit)
	}
	return refs
}

// renderKey is everything a render's answer depends on: the team, the
// cluster and the app (its Argo CD namespace and name: with apps in any
// namespace two apps may share a name), the source (repository, chart,
// commit, spec), each ref source its values may come from (name,
// repository, commit), and what is passed to the tools.
func renderKey(c Cluster, app Application, env renderEnv, src AppSource, commit string, spec json.RawMessage, refs refSources) string {
	sum := sha256.Sum256(spec)
	apis := sha256.Sum256([]byte(strings.Join(env.apiVersions, "\n")))
	refSum := sha256.Sum256([]byte(strings.Join(refs.ids, "\n")))
	return strings.Join([]string{c.TeamID, c.ID, app.Namespace, app.Name, NormalizeRepoURL(src.RepoURL), src.Chart, commit,
		hex.EncodeToString(sum[:]), hex.EncodeToString(refSum[:]), app.Destination.Namespace,
		env.settings.KustomizeBuildOptions, env.kubeVersion, hex.EncodeToString(apis[:])}, "\x00")
}

package mask

import (
	"slices"
	"strings"
)

// automaton is an Aho-Corasick automaton over byte strings that reports, at
// each position of a text, the longest pattern ending there, so one pass
// finds every occurrence of every pattern (the shorter ones ending at the
// same place lie inside the longest). States are numbered breadth first and
// each keeps its transitions sorted in one shared array, so memory is about
// 17 bytes per pattern byte: github.com/BobuSumisu/aho-corasick (already a
// dependency, for gitleaks' keywords) keeps 256 transitions (2 KiB) per
// state, 800 MB for a set of 10,000 values, and strings.Replacer replaces
// leftmost-first, so of two values overlapping in a text it would leave a
// part of one.
type automaton struct {
	first   []int32 // state s's transitions are labels[first[s]:first[s+1]]
	labels  []byte
	next    []int32
	fail    []int32
	longest []int32 // length of the longest pattern ending in state s, 0 for none
}

// newAutomaton builds the automaton of patterns (none empty).
func newAutomaton(patterns []string) *automaton {
	pats := slices.Clone(patterns)
	slices.Sort(pats)
	pats = slices.Compact(pats)
	type node struct{ lo, hi, depth int32 }
	nodes := []node{{0, int32(len(pats)), 0}}
	a := &automaton{}
	var terminal []int32
	// The children of a state are the runs of its patterns sharing the next
	// byte; sorted patterns make them consecutive, in byte order.
	for s := 0; s < len(nodes); s++ {
		n := nodes[s]
		lo, term := n.lo, int32(0)
		if lo < n.hi && int32(len(pats[lo])) == n.depth {
			lo, term = lo+1, n.depth
		}
		terminal = append(terminal, term)
		a.first = append(a.first, int32(len(a.labels)))
		for i := lo; i < n.hi; {
			c := pats[i][n.depth]
			j := i + 1
			for j < n.hi && pats[j][n.depth] == c {
				j++
			}
			a.labels = append(a.labels, c)
			a.next = append(a.next, int32(len(nodes)))
			nodes = append(nodes, node{i, j, n.depth + 1})
			i = j
		}
	}
	a.first = append(a.first, int32(len(a.labels)))
	a.fail = make([]int32, len(nodes))
	a.longest = make([]int32, len(nodes))
	// Breadth-first order: a state's failure link is shallower, so it is
	// complete before the state's children need it.
	for s := range nodes {
		for e := a.first[s]; e < a.first[s+1]; e++ {
			c, t := a.labels[e], a.next[e]
			f := int32(0)
			if s != 0 {
				for u := a.fail[s]; ; u = a.fail[u] {
					if g, ok := a.step(u, c); ok {
						f = g
						break
					}
					if u == 0 {
						break
					}
				}
			}
			a.fail[t] = f
			if a.longest[t] = terminal[t]; a.longest[t] == 0 {
				a.longest[t] = a.longest[f]
			}
		}
	}
	return a
}

// step returns state s's transition on c.
func (a *automaton) step(s int32, c byte) (int32, bool) {
	lo, hi := a.first[s], a.first[s+1]
	for hi-lo > 8 {
		mid := lo + (hi-lo)/2
		if a.labels[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for e := lo; e < hi; e++ {
		if a.labels[e] == c {
			return a.next[e], true
		}
	}
	return 0, false
}

// spans appends the spans of text holding a pattern: for each position,
// the longest pattern ending there.
func (a *automaton) spans(text string, out []span) []span {
	s := int32(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		for {
			if t, ok := a.step(s, c); ok {
				s = t
				break
			}
			if s == 0 {
				break
			}
			s = a.fail[s]
		}
		if l := a.longest[s]; l > 0 {
			out = append(out, span{i + 1 - int(l), i + 1})
		}
	}
	return out
}

// span is a part of a text, [start, end).
type span struct{ start, end int }

// cut replaces the spans of text by Marker; overlapping or adjacent spans
// become one Marker, so no part of either survives.
func cut(text string, spans []span) string {
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		s, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(text[last:s])
		b.WriteString(Marker)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

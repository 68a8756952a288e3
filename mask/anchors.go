package mask

// anchorAliases maps each anchor defined on a line (key: &a value, - &a
// value) to the aliases inside the value it anchors, over the lines the
// scanner would mask for it.
func anchorAliases(ls []yline) map[string][]string {
	graph := map[string][]string{}
	for i, l := range ls {
		if l.trimmed == "" || l.trimmed[0] == '#' {
			continue
		}
		kl, ok := parseLine(l.text, l.indent)
		if !ok {
			continue
		}
		_, anchor, _, body := valueProps(kl.value)
		if anchor == "" {
			continue
		}
		aliases := map[string]bool{}
		collectAliases(body, aliases)
		for j := i + 1; j < valueEnd(ls, i, kl.col, kl.hasKey, body); j++ {
			collectAliases(ls[j].trimmed, aliases)
		}
		for a := range aliases {
			graph[anchor] = append(graph[anchor], a)
		}
	}
	return graph
}

// aliasClosure returns the anchors to mask: those the seeds name, and
// those named by aliases inside their values, to any depth. Each anchor is
// visited once, so a cycle ends.
func aliasClosure(seeds map[string]bool, graph map[string][]string) map[string]bool {
	anchors := map[string]bool{}
	queue := make([]string, 0, len(seeds))
	for a := range seeds {
		queue = append(queue, a)
	}
	for len(queue) > 0 {
		a := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if anchors[a] {
			continue
		}
		anchors[a] = true
		queue = append(queue, graph[a]...)
	}
	return anchors
}

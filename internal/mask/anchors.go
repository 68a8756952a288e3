package mask

// anchorAliases maps each anchor defined on a line (key: &a value, - &a
// value) to the aliases inside the value it anchors, over the lines the
// scanner would mask for it. A value written on its line (a scalar, a
// quoted or block scalar, a flow collection) holds no anchors of its own
// lines and is skipped whole, so the work is linear but for anchors of
// nested block collections, whose depth the indentation bounds.
func anchorAliases(ls []yline) map[string][]string {
	graph := map[string][]string{}
	for i := 0; i < len(ls); i++ {
		l := ls[i]
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
		end := valueEnd(ls, i, kl.col, kl.hasKey, body)
		for j := i + 1; j < end; j++ {
			collectAliases(ls[j].trimmed, aliases)
		}
		for a := range aliases {
			graph[anchor] = append(graph[anchor], a)
		}
		if stripComment(body) != "" {
			i = end - 1
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

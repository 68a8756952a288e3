package gitpreview

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// kustomizeField traces one field of o: the resource's own value, then
// each layer in order; the last that sets it wins. found is false when the
// field is unset in the output.
func kustomizeField(o *kobj, tokens []string, live any, commit string) (setting, bool) {
	var s setting
	set := false
	if node, line, gitTokens, ok := locate(o.doc.node, tokens, live); ok {
		var v any
		err := node.Decode(&v)
		s = setting{source: service.GitSource{Revision: commit, Path: o.file, Line: line, Via: ViaKustomizeResource},
			doc: o.doc, tokens: gitTokens, masked: err != nil, value: v}
		set = true
	}
	for _, l := range o.layers {
		before := s.source
		switch l.kind {
		case "smp":
			if node, line, gitTokens, ok := locate(l.node, tokens, live); ok {
				var v any
				err := node.Decode(&v)
				s = setting{source: service.GitSource{Revision: commit, Path: l.file, Line: line + l.lineOffset, Via: ViaKustomizePatch},
					doc: l.doc, tokens: gitTokens, masked: err != nil, value: v}
				set = true
			}
		case "json6902":
			s, set = json6902(l, tokens, s, set, commit)
		case "replicas":
			if pointer(tokens) == "/spec/replicas" {
				if k, c := entry(l.node, "count"); k != nil {
					n, err := strconv.Atoi(c.Value)
					s = setting{source: service.GitSource{Revision: commit, Path: l.file, Line: k.Line, Via: ViaKustomizeTransformer},
						doc: l.doc, tokens: []string{"count"}, value: n, masked: err != nil}
					set = true
				}
			}
		case "images":
			s, set = images(l, tokens, s, set, commit)
		}
		if l.override != "" && set && (s.source.Path != before.Path || s.source.Line != before.Line || s.source.Via != before.Via) {
			s.source = appOverrideSource(l, s, commit)
		}
	}
	return s, set
}

// json6902 applies a JSON 6902 patch's operations on the field: add or
// replace at the field's pointer sets it, remove at it or above unsets it.
func json6902(l klayer, tokens []string, s setting, set bool, commit string) (setting, bool) {
	want := pointer(tokens)
	for i, op := range l.node.Content {
		p := scalar(op, "path")
		switch scalar(op, "op") {
		case "add", "replace":
			if p == want {
				k, v := entry(op, "value")
				if k == nil {
					continue
				}
				var val any
				err := v.Decode(&val)
				s = setting{source: service.GitSource{Revision: commit, Path: l.file, Line: k.Line + l.lineOffset, Via: ViaKustomizePatch},
					doc: l.doc, tokens: []string{strconv.Itoa(i), "value"}, masked: err != nil, value: val}
				set = true
			}
		case "remove":
			if p == want || strings.HasPrefix(want, p+"/") {
				s, set = setting{}, false
			}
		}
	}
	return s, set
}

// containerImage matches a pointer to a container's image.
var containerImage = regexp.MustCompile(`^(?:/spec/template)?/spec/(?:init|ephemeral)?[cC]ontainers/\d+/image$`)

// images applies the kustomization's images entries to a container's
// image: an entry whose name is the image's name (without tag or digest)
// sets newName, newTag and digest.
func images(l klayer, tokens []string, s setting, set bool, commit string) (setting, bool) {
	current, ok := s.value.(string)
	if !set || !ok || !containerImage.MatchString(pointer(tokens)) {
		return s, set
	}
	name, tag := splitImage(current)
	for i, e := range l.node.Content {
		if scalar(e, "name") != name {
			continue
		}
		newName, newTag, digest := name, tag, ""
		if n := scalar(e, "newName"); n != "" {
			newName = n
		}
		if t := scalar(e, "newTag"); t != "" {
			newTag = ":" + t
		}
		if d := scalar(e, "digest"); d != "" {
			newTag, digest = "", "@"+d
		}
		k, _ := entry(e, "name")
		return setting{source: service.GitSource{Revision: commit, Path: l.file, Line: k.Line, Via: ViaKustomizeTransformer},
			doc: l.doc, tokens: []string{strconv.Itoa(i)}, value: newName + newTag + digest}, true
	}
	return s, set
}

// splitImage splits an image into its name and its ":tag" or "@digest".
func splitImage(image string) (string, string) {
	if i := strings.Index(image, "@"); i >= 0 {
		return image[:i], image[i:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i:]
	}
	return image, ""
}

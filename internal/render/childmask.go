package render

import (
	"github.com/kukie/gitops-server/internal/mask"
)

// maskResult masks what a child returns (Request.Mask) with the server's
// masker: the manifests as a rendered stream, the error message and each
// note as text, as the server would mask them. It runs in the child, under
// its memory limit and timeout, so a stream that is costly to mask (many
// small documents, one huge value) costs that render, never the server.
// A masker that cannot start fails the render closed: nothing unmasked
// leaves.
func maskResult(res Result) Result {
	m, err := mask.New()
	if err != nil {
		return Result{SourceType: res.SourceType, Masked: true, Error: failed("masking is not available in the render process")}
	}
	var secrets mask.Redactions
	if res.Manifests != nil {
		r := m.Manifests(res.Manifests)
		res.Manifests, secrets = r.Content, r.Redactions
	}
	if res.Error != nil {
		e := *res.Error
		r := m.File("render-error.txt", []byte(e.Message))
		e.Message, secrets = string(r.Content), append(secrets, r.Redactions...)
		res.Error = &e
	}
	for i, n := range res.Notes {
		r := m.File("render-note.txt", []byte(n))
		res.Notes[i], secrets = string(r.Content), append(secrets, r.Redactions...)
	}
	res.Masked, res.Secrets = true, secrets.Merge().Bounded()
	return res
}

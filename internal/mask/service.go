package mask

import "github.com/kukie/gitops-server/service"

// ForService is the masker as the repo view consumes it
// (service.SecretMasker and service.ManifestMasker): masked text with the
// values masking removed, which the request cuts from its other texts.
// The server wires it, and tests that need the real masker use it too.
type ForService struct{ M *Masker }

var (
	_ service.SecretMasker   = ForService{}
	_ service.ManifestMasker = ForService{}
)

// File masks one repository file.
func (f ForService) File(path string, content []byte) service.MaskedText {
	r := f.M.File(path, content)
	return service.MaskedText{Content: r.Content, Secrets: r.Redactions}
}

// Manifests masks a rendered multi-document stream.
func (f ForService) Manifests(yaml []byte) service.MaskedText {
	r := f.M.Manifests(yaml)
	return service.MaskedText{Content: r.Content, Secrets: r.Redactions}
}

// Redactor compiles secrets once (a render's set is cached with the
// render) and joins the request's other sets without compiling them again.
func (ForService) Redactor(secrets []string, join ...service.Redactor) service.Redactor {
	rs := []TextRedactor{Redactions(secrets).Compile()}
	for _, j := range join {
		rs = append(rs, j)
	}
	return Join(rs...)
}

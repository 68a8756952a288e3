package api

import (
	"net/http"

	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"

	"github.com/kukie/gitops-server/openapi"
)

// handleOpenAPI serves the embedded OpenAPI document.
func handleOpenAPI() http.Handler {
	doc := []byte(openapi.Document())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(doc)
	})
}

// handleDocs serves Swagger UI from assets embedded in the binary (no CDN),
// pointed at /openapi.yaml.
func handleDocs() http.Handler {
	return v5emb.NewHandlerWithConfig(swgui.Config{
		Title:       "Kukie GitOps server API",
		SwaggerJSON: "/openapi.yaml",
		BasePath:    "/docs/",
		ShowTopBar:  false,
	})
}

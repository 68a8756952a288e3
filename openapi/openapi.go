// Package openapi embeds the OpenAPI 3.1 document, the contract the app team
// codes against. Tests check that it is valid, that it matches the routes,
// and that every response the API tests see validates against it.
package openapi

import _ "embed"

//go:embed openapi.yaml
var document string

// Document returns the OpenAPI document (YAML).
func Document() string { return document }

package kube

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// pageSize is how many Applications one LIST call asks for: client-go's
// pager default (tools/pager DefaultPageSize) and kubectl's --chunk-size.
// Each page is decoded item by item as it arrives, so Kukie holds one item's
// bytes at a time; pages keep the customer's API server from building one
// huge response.
const pageSize = 500

// pageFetcher GETs one page of an Applications list: namespace "" is all
// namespaces, token the continue token of the previous page ("" for the
// first). Tests wrap it to inject failures.
type pageFetcher func(ctx context.Context, namespace, token string) (io.ReadCloser, error)

// restPages fetches pages with client: the raw JSON of
// /apis/argoproj.io/v1alpha1[/namespaces/<ns>]/applications, which
// client-go's rate limiting, retries and error decoding (a 403 is a
// StatusError, as from the dynamic client) still cover.
func restPages(client rest.Interface, limit int) pageFetcher {
	return func(ctx context.Context, namespace, token string) (io.ReadCloser, error) {
		path := []string{"/apis", applicationsGVR.Group, applicationsGVR.Version}
		if namespace != "" {
			path = append(path, "namespaces", namespace)
		}
		req := client.Get().AbsPath(append(path, applicationsGVR.Resource)...).
			Param("limit", strconv.Itoa(limit)).SetHeader("Accept", "application/json")
		if token != "" {
			req = req.Param("continue", token)
		}
		return req.Stream(ctx)
	}
}

// listApplications reads every Application of namespace ("" for all), page
// by page. When a continue token has expired (410 Gone: etcd compacted past
// the list's revision while it was read), the list starts again from the
// first page, once; the apps read so far are dropped, so none is counted
// twice.
func listApplications(ctx context.Context, fetch pageFetcher, namespace string, dec *argocd.ApplicationDecoder) ([]service.Application, error) {
	apps, err := readPages(ctx, fetch, namespace, dec)
	if apierrors.IsResourceExpired(err) {
		apps, err = readPages(ctx, fetch, namespace, dec)
	}
	if err != nil {
		return nil, err
	}
	// Appending left up to twice the room needed; the slice is kept as long
	// as the snapshot, so drop the spare room.
	return slices.Clone(apps), nil
}

func readPages(ctx context.Context, fetch pageFetcher, namespace string, dec *argocd.ApplicationDecoder) ([]service.Application, error) {
	apps := []service.Application{}
	items := func(jd *jsontext.Decoder) (err error) {
		apps, err = decodeItems(jd, dec, apps)
		return err
	}
	token := ""
	for {
		body, err := fetch(ctx, namespace, token)
		if err != nil {
			return nil, err
		}
		token, err = decodePage(body, items)
		body.Close()
		if err != nil {
			return nil, err
		}
		if token == "" {
			return apps, nil
		}
	}
}

// errNotAList is a 2xx response that is not a JSON list.
var errNotAList = errors.New("the list response is not a JSON list")

// decodePage reads one list response, handing its items member to items
// as the body streams in, and returns the continue token ("" on the last
// page).
func decodePage(body io.Reader, items func(*jsontext.Decoder) error) (string, error) {
	// Repeated names and invalid UTF-8 are accepted, as encoding/json (and
	// so the dynamic client) accepts them.
	jd := jsontext.NewDecoder(body, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := jd.ReadToken(); err != nil {
		return "", err
	} else if tok.Kind() != '{' {
		return "", errNotAList
	}
	var token string
	for jd.PeekKind() != '}' {
		name, err := jd.ReadToken()
		if err != nil {
			return "", err
		}
		switch name.String() {
		case "items":
			err = items(jd)
		case "metadata":
			token, err = continueToken(jd)
		default:
			err = jd.SkipValue()
		}
		if err != nil {
			return "", err
		}
	}
	if _, err := jd.ReadToken(); err != nil {
		return "", err
	}
	return token, nil
}

// decodeItems appends the page's usable Applications to apps, decoding
// one item at a time (argocd.ApplicationDecoder.Decode skips the others).
func decodeItems(jd *jsontext.Decoder, dec *argocd.ApplicationDecoder, apps []service.Application) ([]service.Application, error) {
	err := eachItem(jd, func() error {
		raw, err := jd.ReadValue()
		if err != nil {
			return err
		}
		if a, ok := dec.Decode(raw); ok {
			apps = append(apps, a)
		}
		return nil
	})
	return apps, err
}

// continueToken reads a list's metadata and returns metadata.continue.
func continueToken(jd *jsontext.Decoder) (string, error) {
	if jd.PeekKind() != '{' {
		return "", jd.SkipValue()
	}
	if _, err := jd.ReadToken(); err != nil {
		return "", err
	}
	var token string
	for jd.PeekKind() != '}' {
		name, err := jd.ReadToken()
		if err != nil {
			return "", err
		}
		if name.String() == "continue" && jd.PeekKind() == '"' {
			tok, err := jd.ReadToken()
			if err != nil {
				return "", err
			}
			token = tok.String()
		} else if err := jd.SkipValue(); err != nil {
			return "", err
		}
	}
	_, err := jd.ReadToken()
	return token, err
}

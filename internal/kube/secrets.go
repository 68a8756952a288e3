package kube

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kukie/gitops-server/service"
)

// clusterSecretSelector selects Argo CD's cluster secrets (upstream
// common.LabelKeySecretType = common.LabelValueSecretTypeCluster).
const clusterSecretSelector = "argocd.argoproj.io/secret-type=cluster"

var _ service.ClusterSecretReader = (*Reader)(nil)

// ClusterSecrets lists the cluster secrets of the cluster's Argo CD
// namespace and returns each one's name and server. The API server sends
// a secret's whole data: the list is decoded as it streams in, keeping
// data.name and data.server and skipping every other member (config holds
// bearer tokens and role ARNs) without decoding it. Secrets without a
// server are left out.
func (r *Reader) ClusterSecrets(ctx context.Context, c service.Cluster) ([]service.ArgoCDClusterRef, error) {
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		return nil, service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var refs []service.ArgoCDClusterRef
	items := func(jd *jsontext.Decoder) error { return decodeSecretItems(jd, &refs) }
	token := ""
	for {
		req := cs.rest.Get().AbsPath("/api/v1/namespaces", c.ArgoCDNamespace, "secrets").
			Param("labelSelector", clusterSecretSelector).Param("limit", strconv.Itoa(r.pageSize)).
			SetHeader("Accept", "application/json")
		if token != "" {
			req = req.Param("continue", token)
		}
		body, err := req.Stream(ctx)
		if err == nil {
			token, err = decodePage(body, items)
			body.Close()
		}
		if err != nil {
			return nil, secretsError(ctx, c, err)
		}
		if token == "" {
			return refs, nil
		}
	}
}

func secretsError(ctx context.Context, c service.Cluster, err error) error {
	if se := connectionError(c, err); se != nil {
		return se
	}
	switch {
	case apierrors.IsForbidden(err):
		return reasonError(service.EFORBIDDEN, ReasonForbidden, "Kukie's role may not list Argo CD's cluster secrets.", err)
	case pastDeadline(ctx):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	}
	return service.WrapError(service.EINTERNAL, "Listing Argo CD's cluster secrets failed.", err)
}

// decodeSecretItems reads a Secret list's items, appending each secret's
// name and server.
func decodeSecretItems(jd *jsontext.Decoder, refs *[]service.ArgoCDClusterRef) error {
	return eachItem(jd, func() error {
		var ref service.ArgoCDClusterRef
		err := eachMember(jd, func(name string) error {
			if name != "data" {
				return jd.SkipValue()
			}
			return eachMember(jd, func(key string) error {
				switch key {
				case "name":
					return base64String(jd, &ref.Name)
				case "server":
					return base64String(jd, &ref.Server)
				}
				return jd.SkipValue()
			})
		})
		if err == nil && ref.Server != "" {
			*refs = append(*refs, ref)
		}
		return err
	})
}

// eachItem calls item at the start of each element of the array the
// decoder is at (null is an empty array).
func eachItem(jd *jsontext.Decoder, item func() error) error {
	switch jd.PeekKind() {
	case 'n':
		_, err := jd.ReadToken()
		return err
	case '[':
	default:
		return fmt.Errorf("%w: items is not an array", errNotAList)
	}
	if _, err := jd.ReadToken(); err != nil {
		return err
	}
	for jd.PeekKind() != ']' {
		if err := item(); err != nil {
			return err
		}
	}
	_, err := jd.ReadToken()
	return err
}

// eachMember calls member for each member name of the object the decoder
// is at, which must read (or skip) the member's value; a value that is not
// an object is skipped.
func eachMember(jd *jsontext.Decoder, member func(name string) error) error {
	if jd.PeekKind() != '{' {
		return jd.SkipValue()
	}
	if _, err := jd.ReadToken(); err != nil {
		return err
	}
	for jd.PeekKind() != '}' {
		name, err := jd.ReadToken()
		if err != nil {
			return err
		}
		if err := member(name.String()); err != nil {
			return err
		}
	}
	_, err := jd.ReadToken()
	return err
}

// base64String decodes a Secret data value into dst (left as it is when
// the value is not base64 text).
func base64String(jd *jsontext.Decoder, dst *string) error {
	if jd.PeekKind() != '"' {
		return jd.SkipValue()
	}
	tok, err := jd.ReadToken()
	if err != nil {
		return err
	}
	if b, err := base64.StdEncoding.DecodeString(tok.String()); err == nil {
		*dst = string(b)
	}
	return nil
}

package render

import (
	"context"
	"encoding/json"

	"github.com/kukie/gitops-server/service"
)

// ChildRenderer is the service's Renderer: each render runs in a child
// process (Binary with the argument "render", RunChild) under Limits, and
// the child masks its output, error and notes itself (Request.Mask), so a
// tenant's output that is costly to mask costs that render, not the
// server's heap. The view's ManifestMasker stays for renderers that do not
// mask.
type ChildRenderer struct {
	Binary string
	Limits Limits
}

var _ service.ManifestRenderer = ChildRenderer{}

// Render renders one source of in.
func (r ChildRenderer) Render(ctx context.Context, in service.RenderInput) (service.RenderOutput, error) {
	var src Source
	if len(in.Spec) > 0 {
		if err := json.Unmarshal(in.Spec, &src); err != nil {
			return service.RenderOutput{Code: service.ReasonRenderFailed, Message: "The app's source does not parse."}, nil
		}
	}
	res, err := RunChild(ctx, r.Binary, []string{"render"}, Request{Files: in.Files, RefFiles: in.RefFiles,
		Source: src, AppName: in.AppName, Namespace: in.Namespace, KustomizeBuildOptions: in.KustomizeBuildOptions,
		KubeVersion: in.KubeVersion, APIVersions: in.APIVersions, Mask: true}, r.Limits)
	if err != nil {
		return service.RenderOutput{}, err
	}
	// The child masks what it returns; a result the parent made (a timeout,
	// a child that died) is not masked, and the service masks its message.
	out := service.RenderOutput{Manifests: res.Manifests, SourceType: res.SourceType, Notes: res.Notes,
		Masked: res.Masked, Secrets: res.Secrets}
	if res.Error != nil {
		// This package's codes and reasons are the service's (request.go).
		out.Code, out.Reason, out.Message = service.Reason(res.Error.Code), service.Reason(res.Error.Reason), res.Error.Message
	}
	return out, nil
}

var _ service.HelmTracer = ChildRenderer{}

// TraceHelm renders a Helm source of in with traced values in a child
// process under the same limits (TraceHelm); the trace is not masked.
func (r ChildRenderer) TraceHelm(ctx context.Context, in service.RenderInput) (service.HelmTrace, error) {
	var src Source
	if len(in.Spec) > 0 {
		if err := json.Unmarshal(in.Spec, &src); err != nil {
			return service.HelmTrace{Code: service.ReasonRenderFailed, Message: "The app's source does not parse."}, nil
		}
	}
	res, err := RunChild(ctx, r.Binary, []string{"render"}, Request{Files: in.Files, RefFiles: in.RefFiles,
		Source: src, AppName: in.AppName, Namespace: in.Namespace, KubeVersion: in.KubeVersion,
		APIVersions: in.APIVersions, Trace: true}, r.Limits)
	switch {
	case err != nil:
		return service.HelmTrace{}, err
	case res.Error != nil:
		return service.HelmTrace{Code: service.Reason(res.Error.Code), Reason: service.Reason(res.Error.Reason), Message: res.Error.Message}, nil
	case res.Trace == nil:
		return service.HelmTrace{Code: service.ReasonRenderFailed, Message: "The traced render returned nothing."}, nil
	}
	return *res.Trace, nil
}

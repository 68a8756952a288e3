# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION=$(git describe --always --dirty) -t kukie-server .
#
# Base images are pinned by digest. The digests were NOT pulled or verified
# here (no Docker engine runs on the machine that wrote this file); they were
# taken from a public Dockerfile pinning the same two tags:
#   https://github.com/kubeswift-io/kubeswift-spin/blob/4fc611825eb3fafa2cc2acd5076ecee686d6e0c7/Dockerfile
# Check them before the first release and when bumping, e.g. with
# `docker buildx imagetools inspect <tag>`. deploy/dockerfile_test.go checks
# the properties below, since nothing here builds the image.

# Tag: golang:1.26.8-bookworm (go.mod's Go version).
FROM golang:1.26.8-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
ENV GOTOOLCHAIN=local
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# The same flags as `make build`: static (no cgo), no local paths, version stamped.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" \
      -o /out/kukie-server ./cmd/kukie-server

# Tag: gcr.io/distroless/static-debian12:nonroot
# No shell, no package manager; CA certificates included (the JWKS endpoint
# is https). Only the binary is copied. Renders run in a child process of this
# same binary (`kukie-server render`, found through os.Executable), which needs
# neither a shell nor PATH, only that the binary stays where ENTRYPOINT names it.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/kukie-server /kukie-server
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/kukie-server"]
CMD ["serve"]

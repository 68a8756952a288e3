# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION=$(git describe --always) -t kukie-server .
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/kukie-server ./cmd/kukie-server

# distroless static: no shell, no package manager, CA certificates included
# (the JWKS endpoint is https), runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kukie-server /kukie-server
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/kukie-server"]
CMD ["serve"]

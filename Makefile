# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test tools build lint bench soak fuzz-smoke

run: ## The whole product locally, in stages: the API at once, the Git world in seconds, the AWS world and sandbox cluster once `make tools` is done; prints tokens and docs/try-it.json's lines.
	./scripts/dev-run.sh

test: tools build ## All tests, against the local PostgreSQL and the built kube-apiserver (and the release binary, which deploy/dockerfile_test.go checks).
	./scripts/ensure-postgres.sh
	go test -race -count=1 -timeout 20m ./...

tools: ## Build kube-apiserver and etcd into a cache outside the repo (~10 min cold, then instant).
	./scripts/tools.sh

bench: tools build ## Argo CD, ownership, history and scale-out (issue 12) benchmarks (about 13 minutes); prints Markdown tables.
	./scripts/ensure-postgres.sh
	go run ./cmd/kukie-bench -server bin/kukie-server
	go run ./cmd/kukie-bench history
	go run ./cmd/kukie-bench scaleout -server bin/kukie-server
	go test -run '^$$' -bench BenchmarkLocate ./internal/gitpreview

soak: tools build ## Issue 13's load and soak: 64 clients, a mix of list, detail, ownership, plans and history for 5 minutes, loopback only; fails on any non-4xx error.
	./scripts/ensure-postgres.sh
	go run ./cmd/kukie-bench soak -server bin/kukie-server

build: VERSION ?= $(or $(shell git describe --always --dirty 2>/dev/null),unknown)
build: ## The release binary (static, -trimpath, version stamped), as the Dockerfile builds it; deploy/dockerfile_test.go checks it.
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/kukie-server ./cmd/kukie-server

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	go tool staticcheck ./...

fuzz-smoke: ## Every fuzz target for FUZZTIME (20 s) each, one per go test run, from its committed corpus (testdata/fuzz).
	./scripts/fuzz-smoke.sh

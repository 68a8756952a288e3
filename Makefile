# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test build lint fmt

run: ## Run the server locally (database created and migrated, tokens printed).
	./scripts/dev-run.sh

test: ## All tests, against the local PostgreSQL (started if installed but stopped).
	./scripts/ensure-postgres.sh
	go test -race -count=1 ./...

build:
	CGO_ENABLED=0 go build -trimpath -o bin/kukie-server ./cmd/kukie-server

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	go tool staticcheck ./...

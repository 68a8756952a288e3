package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// handleAccountCreate connects an AWS account: the role is assumed with the
// team's ExternalId (and must refuse to be assumed without it), the stack
// read, the account stored.
func handleAccountCreate(log *slog.Logger, accounts *service.Accounts) http.Handler {
	type request struct {
		RoleARN     string              `json:"role_arn"`
		StackARN    string              `json:"stack_arn"`
		AccessLevel service.AccessLevel `json:"access_level"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := accounts.Connect(r.Context(), p, in.RoleARN, in.StackARN, in.AccessLevel)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		w.Header().Set("Location", "/v1/aws/accounts/"+a.ID)
		encode(w, http.StatusCreated, a)
	})
}

func handleAccountList(log *slog.Logger, accounts *service.Accounts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		as, err := accounts.List(r.Context(), p)
		reply(w, r, log, map[string]any{"accounts": as}, err)
	})
}

func handleAccountGet(log *slog.Logger, accounts *service.Accounts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := accounts.Get(r.Context(), p, chi.URLParam(r, "account_id"))
		reply(w, r, log, a, err)
	})
}

// handleOnboarding answers what the customer's stack needs: the team's
// ExternalId, the template parameters and an honest account of each level.
func handleOnboarding(log *slog.Logger, accounts *service.Accounts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		o, err := accounts.Onboarding(r.Context(), p)
		reply(w, r, log, o, err)
	})
}

// handleAccountDelete disconnects an account: 202 with the account marked
// deleting; jobs remove Kukie's access from each of its clusters first.
func handleAccountDelete(log *slog.Logger, accounts *service.Accounts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := accounts.Remove(r.Context(), p, chi.URLParam(r, "account_id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusAccepted, a)
	})
}

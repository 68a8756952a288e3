package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// handleAccessLevelPut records the level an admin chose for an account and
// starts the reconcile that applies it: 202 with the account.
func handleAccessLevelPut(log *slog.Logger, switches *service.Switches) http.Handler {
	type request struct {
		AccessLevel service.AccessLevel `json:"access_level"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := switches.ChooseLevel(r.Context(), p, chi.URLParam(r, "account_id"), in.AccessLevel)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusAccepted, a)
	})
}

// handleAccessChanges answers an account's switch history, newest first,
// paged by the id of the last step seen (before).
func handleAccessChanges(log *slog.Logger, switches *service.Switches) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var v service.ValidationErrors
		limit, err := service.ParseLimit(q.Get("limit"))
		var se *service.Error
		if errors.As(err, &se) {
			// The route's contract answers 422 for every bad parameter,
			// a limit that is not a number too.
			v = append(v, se.Fields...)
		}
		before := int64(0)
		if s := q.Get("before"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 1 {
				v.Add("before", "must be the id of a step")
			}
			before = n
		}
		if err := v.Err(); err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		page, err := switches.History(r.Context(), p, chi.URLParam(r, "account_id"), limit, before)
		reply(w, r, log, page, err)
	})
}

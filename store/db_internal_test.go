package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kukie/gitops-server/service"
)

func TestMapError(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"NoRows":          {pgx.ErrNoRows, service.ENOTFOUND},
		"UniqueViolation": {&pgconn.PgError{Code: "23505"}, service.ECONFLICT},
		"DataException":   {&pgconn.PgError{Code: "22003"}, service.EVALIDATION},
		"AdminShutdown":   {&pgconn.PgError{Code: "57P01"}, service.EUNAVAILABLE},
		"OtherServerErr":  {&pgconn.PgError{Code: "42P01"}, service.EINTERNAL},
		"Refused":         {fmt.Errorf("query: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), service.EUNAVAILABLE},
		"BrokenConn":      {fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), service.EUNAVAILABLE},
		"ConnClosed":      {pgconn.ErrConnClosed, service.EUNAVAILABLE},
		"Deadline":        {context.DeadlineExceeded, service.EUNAVAILABLE},
		"ScanBug":         {errors.New("can't scan into dest[3]"), service.EINTERNAL},
		"TooManyRows":     {pgx.ErrTooManyRows, service.EINTERNAL},
		"ServiceError":    {service.Errorf(service.ECONFLICT, "x"), service.ECONFLICT},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := service.ErrorCode(mapError(c.err)); got != c.want {
				t.Errorf("mapError(%v) code = %q, want %q", c.err, got, c.want)
			}
		})
	}
	if err := mapError(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled request became %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

// The control socket is a Unix socket in the sandbox's directory (mode
// 0600): `kukie-sandbox cluster` and `kukie-sandbox stack-update` talk to
// the running sandbox through it, as plain HTTP with JSON bodies.

type clusterRequest struct {
	Assets string `json:"assets"`
}

type clusterAnswer struct {
	ClustersFile string `json:"clusters_file"`
}

type stackUpdateRequest struct {
	AccessLevel string `json:"access_level"`
}

type stackUpdateAnswer struct {
	WebhookStatus int    `json:"webhook_status"`
	WebhookAnswer string `json:"webhook_answer"`
}

type controlError struct {
	Error string `json:"error"`
}

// serveControl serves the control socket until ctx ends.
func (w *world) serveControl(ctx context.Context) (stop func(), err error) {
	path := filepath.Join(w.dir, fileControl)
	_ = os.Remove(path) // left by a sandbox that was killed
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cluster", func(rw http.ResponseWriter, r *http.Request) {
		var in clusterRequest
		if !decodeControl(rw, r, &in) {
			return
		}
		path, err := w.startCluster(r.Context(), in.Assets)
		answerControl(rw, clusterAnswer{ClustersFile: path}, err)
	})
	mux.HandleFunc("POST /stack-update", func(rw http.ResponseWriter, r *http.Request) {
		var in stackUpdateRequest
		if !decodeControl(rw, r, &in) {
			return
		}
		level := awsfake.Level(in.AccessLevel)
		if level != awsfake.LevelFull && level != awsfake.LevelLimited {
			answerControl(rw, nil, fmt.Errorf("--access-level must be FULL or LIMITED, not %q", in.AccessLevel))
			return
		}
		status, body, err := w.stackUpdate(r.Context(), level)
		answerControl(rw, stackUpdateAnswer{WebhookStatus: status, WebhookAnswer: body}, err)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = srv.Close()
		_ = os.Remove(path)
	}, nil
}

func decodeControl(rw http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil {
		answerControl(rw, nil, fmt.Errorf("bad request: %w", err))
		return false
	}
	return true
}

func answerControl(rw http.ResponseWriter, v any, err error) {
	rw.Header().Set("Content-Type", "application/json")
	if err != nil {
		rw.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(rw).Encode(controlError{Error: err.Error()})
		return
	}
	_ = json.NewEncoder(rw).Encode(v)
}

// control sends one request to the sandbox running in dir and decodes its
// answer into out.
func control(ctx context.Context, dir, path string, in, out any) error {
	sock := filepath.Join(dir, fileControl)
	if _, err := os.Stat(sock); err != nil {
		return fmt.Errorf("no sandbox runs in %s (no %s): start it with `make run`", dir, fileControl)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://sandbox"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the sandbox in %s does not answer: %w", dir, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e controlError
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("the sandbox answered %d: %s", res.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

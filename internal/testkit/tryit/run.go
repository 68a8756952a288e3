package tryit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Runner runs lines as make run's reader would: requests over HTTP, sandbox
// commands through Command. Saved values are added to Vars.
type Runner struct {
	Client *http.Client
	// Vars holds API, the tokens and the world's values.
	Vars map[string]string
	// Command runs a kukie-sandbox command and returns its output.
	Command func(ctx context.Context, args []string) (string, error)
	// Poll is the pause between tries of an Until line (default 500 ms);
	// ctx's deadline bounds the tries.
	Poll time.Duration
}

// Result is the last answer to a line.
type Result struct {
	Status int
	Body   string
}

// Run runs one line. A request must answer 2xx; an Until line is repeated
// until its condition holds (or ctx ends); a Save line stores its value.
func (r *Runner) Run(ctx context.Context, l Line) (Result, error) {
	if len(l.Command) > 0 {
		args := make([]string, len(l.Command))
		for i, a := range l.Command {
			var err error
			if args[i], err = expand(a, r.Vars); err != nil {
				return Result{}, err
			}
		}
		out, err := r.Command(ctx, args)
		return Result{Body: out}, err
	}
	for {
		res, fields, err := r.request(ctx, l)
		if err != nil {
			return res, err
		}
		if l.Save != nil {
			v, ok := fields[l.Save.Field].(string)
			if !ok || v == "" {
				return res, fmt.Errorf("no %q in the answer: %s", l.Save.Field, res.Body)
			}
			r.Vars[l.Save.Var] = v
		}
		if holds(l, fields) {
			return res, nil
		}
		poll := r.Poll
		if poll == 0 {
			poll = 500 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("not yet %v: %w; last answer %s", l.Until, ctx.Err(), res.Body)
		case <-time.After(poll):
		}
	}
}

// request makes the line's request once; a non-2xx answer is an error.
func (r *Runner) request(ctx context.Context, l Line) (Result, map[string]any, error) {
	url, err := expand("${API}"+l.Path, r.Vars)
	if err != nil {
		return Result{}, nil, err
	}
	var body io.Reader
	if len(l.Body) > 0 {
		b, err := expand(string(l.Body), r.Vars)
		if err != nil {
			return Result{}, nil, err
		}
		body = bytes.NewReader([]byte(b))
	}
	req, err := http.NewRequestWithContext(ctx, l.Method, url, body)
	if err != nil {
		return Result{}, nil, err
	}
	if l.Token != "" {
		tok, err := expand("${"+l.Token+"}", r.Vars)
		if err != nil {
			return Result{}, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := r.Client.Do(req)
	if err != nil {
		return Result{}, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	out := Result{Status: res.StatusCode, Body: string(b)}
	if err != nil {
		return out, nil, err
	}
	if res.StatusCode/100 != 2 {
		return out, nil, fmt.Errorf("%s %s answered %d: %s", l.Method, l.Path, res.StatusCode, b)
	}
	var fields map[string]any
	_ = json.Unmarshal(b, &fields) // an answer that is not an object has no fields
	return out, fields, nil
}

// holds reports whether an answer's fields meet the line's Until
// condition (a line without one holds at once). A string is compared as
// is, anything else as JSON (true, 12), as `kukie-sandbox pick` prints it.
func holds(l Line, fields map[string]any) bool {
	for f, want := range l.Until {
		v, ok := fields[f]
		if !ok {
			return false
		}
		got, isString := v.(string)
		if !isString {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != want {
			return false
		}
	}
	return true
}

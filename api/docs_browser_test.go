package api

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// operationSelector matches one rendered operation in Swagger UI (the UI
// api/docs.go serves via swgui v5emb), inside its tag section.
const operationSelector = ".opblock-tag-section .opblock"

// TestDocsInBrowser loads /docs in headless Chromium and checks that Swagger
// UI renders every operation of openapi/openapi.yaml, with no JavaScript
// exception, console error or request leaving the machine.
func TestDocsInBrowser(t *testing.T) {
	doc, _ := mustSpec(t)
	want := 0
	for _, item := range doc.Paths.Map() {
		want += len(item.Operations())
	}
	if want == 0 {
		t.Fatal("openapi/openapi.yaml has no operations")
	}

	srv := mustServe(t)
	problems := &pageProblems{}
	ctx := mustBrowser(t, problems.watch)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/docs")); err != nil {
		t.Fatalf("load /docs: %v (problems seen: %v)", err, problems.list())
	}
	got, err := waitForCount(ctx, operationSelector, want)
	if err != nil {
		t.Fatalf("waiting for %d rendered operations (%s), last saw %d: %v; problems seen: %v",
			want, operationSelector, got, err, problems.list())
	}

	specErrors, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.errors-wrapper').length`))
	if err != nil {
		t.Fatalf("count Swagger UI errors: %v", err)
	}
	if specErrors != 0 {
		t.Errorf("Swagger UI shows %d error panel(s) for the document", specErrors)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("KUKIE_ARTIFACTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	path := filepath.Join(dir, "docs.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
	t.Logf("%d operations rendered; screenshot at %s", got, path)

	for _, p := range problems.list() {
		t.Error(p)
	}
}

// mustBrowser starts headless Chromium for the test and returns a tab
// context bounded by a generous deadline that only catches hangs; listen sees
// every event of the tab from its start. Without Chromium the test fails and
// says how to install it.
func mustBrowser(tb testing.TB, listen func(ev any)) context.Context {
	tb.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		tb.Fatalf("chromium not found on PATH (%v): install it with `apt-get install -y chromium` (as .ci/run does)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.WindowSize(1280, 1024),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), 60*time.Second)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(listen))
	tb.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelTimeout()
	})
	if err := chromedp.Do(tabCtx); err != nil {
		tb.Fatalf("start chromium (%s): %v", chromium, err)
	}
	return tabCtx
}

// pageProblems collects what the page must not do, from DevTools events.
type pageProblems struct {
	mu   sync.Mutex
	seen []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, fmt.Sprintf(format, args...))
}

func (p *pageProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// watch records JavaScript exceptions, console and log errors, and requests
// to anything but a loopback address. It runs on chromedp's read loop, so it
// only appends under a lock.
func (p *pageProblems) watch(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		p.add("JavaScript exception at %s:%d: %s", d.URL, d.LineNumber, msg)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				if a.Description != "" {
					args = append(args, a.Description)
				} else {
					args = append(args, string(a.Value))
				}
			}
			p.add("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError {
			p.add("browser log error (%s) %s: %s", ev.Entry.Source, ev.Entry.URL, ev.Entry.Text)
		}
	case *network.EventRequestWillBeSent:
		if !isLoopback(ev.Request.URL) {
			p.add("request to a non-loopback address: %s %s", ev.Request.Method, ev.Request.URL)
		}
	}
}

// isLoopback reports whether a request stays on this machine: a loopback
// host, or a data:/blob: URL that needs no network at all.
func isLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob":
		return true
	case "http", "https", "ws", "wss":
	default:
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// waitForCount polls until exactly want elements match selector, returning
// the last count seen. Only ctx's deadline ends the wait early.
func waitForCount(ctx context.Context, selector string, want int) (int, error) {
	expr := fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)
	got := -1
	for {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			return got, err
		}
		got = n
		if got == want {
			return got, nil
		}
		if err := chromedp.Do(ctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
			return got, err
		}
	}
}

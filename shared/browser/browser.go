// Package browser drives a headless Chromium from tests, through
// github.com/chromedp/chromedp: it opens a page, collects what the page
// logged as an error (console errors, uncaught exceptions, failed loads),
// evaluates JavaScript in it, waits for a condition, and checks that no
// text of its SVG charts is clipped or overlaps another.
//
// One browser serves a test binary (For starts it on first use, Stop ends
// it from TestMain); each page is a tab of its own. Where there is no
// Chromium the test is skipped with a line that names make deps, except
// in CI (CI set, as .ci/run sets it), where that is a failure.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/knowngood/knowngood/shared/prereq"
)

// Timeouts: starting the browser (a cold start on a busy 2-core machine
// takes seconds), and one step on a page (a load, an evaluation).
const (
	startTimeout = 60 * time.Second
	stepTimeout  = 30 * time.Second
)

// Browser is one headless Chromium.
type Browser struct {
	ctx          context.Context // the browser's; a page's is derived from it
	cancelAlloc  context.CancelFunc
	cancelBrowse context.CancelFunc
	dataDir      string
}

var shared struct {
	mu  sync.Mutex
	b   *Browser
	err error
}

// ExecPath is the Chromium found on PATH (Debian's chromium; make deps
// installs it), or an error that says how to get one.
func ExecPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH (Debian: apt-get install -y chromium)")
}

// For is the test binary's browser, started on the first call: a test
// that cannot have one is skipped, or fails in CI.
func For(t testing.TB) *Browser {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil && shared.err == nil {
		shared.b, shared.err = Start()
	}
	if shared.err != nil {
		var missing *missingError
		if errors.As(shared.err, &missing) {
			prereq.Need(t, "Chromium", shared.err)
		}
		t.Fatalf("starting Chromium: %v", shared.err)
	}
	return shared.b
}

// Stop ends the browser For started, if any; call it from TestMain after
// the tests ran.
func Stop() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b != nil {
		shared.b.Close()
		shared.b = nil
	}
}

type missingError struct{ err error }

func (e *missingError) Error() string { return e.err.Error() }

// Start starts a headless Chromium with a fresh profile. The flags keep it
// off the network: without the background-networking ones it tries to
// reach update and sync servers, and logs every refused connection.
func Start() (*Browser, error) {
	path, err := ExecPath()
	if err != nil {
		return nil, &missingError{err}
	}
	dir, err := os.MkdirTemp("", "knowngood-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.NoSandbox, // tests run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 1000),
	)
	b := &Browser{dataDir: dir}
	var allocCtx context.Context
	allocCtx, b.cancelAlloc = chromedp.NewExecAllocator(context.Background(), opts...)
	b.ctx, b.cancelBrowse = chromedp.NewContext(allocCtx)
	// The first action starts the browser, which lives as long as the
	// context of that call: the start is bounded by a timer that closes
	// the browser, not by a timeout on that context.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(b.ctx, chromedp.Navigate("about:blank")) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-started:
	case <-timer.C:
		err = fmt.Errorf("no answer within %s", startTimeout)
		b.Close()
		<-started
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() {
	b.cancelBrowse()
	b.cancelAlloc()
	_ = os.RemoveAll(b.dataDir)
}

// Page is one tab.
type Page struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// Open opens url in a new tab and waits for it to load; the tab closes
// when the test ends.
func (b *Browser) Open(t testing.TB, url string) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	p := &Page{ctx: ctx}
	if err := chromedp.Listen(ctx, p.listen); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	enableLog := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return err
	})
	p.do(t, "open "+url, enableLog, chromedp.Navigate(url))
	return p
}

// listen keeps what the page reports as an error.
func (p *Page) listen(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		problem = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			problem = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			problem = fmt.Sprintf("%s %s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if problem != "" {
		p.mu.Lock()
		p.problems = append(p.problems, problem)
		p.mu.Unlock()
	}
}

// Problems are the errors and warnings the page has reported so far.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// NoProblems fails the test for each error or warning the page reported.
func (p *Page) NoProblems(t testing.TB) {
	t.Helper()
	for _, problem := range p.Problems() {
		t.Errorf("the page reported %s", problem)
	}
}

// do runs actions within stepTimeout; an error fails the test.
func (p *Page) do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v (page problems: %q)", what, err, p.Problems())
	}
}

// Eval evaluates the JavaScript expression js and decodes its value (by
// JSON) into a T.
func Eval[T any](t testing.TB, p *Page, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %.80s: %v (page problems: %q)", js, err, p.Problems())
	}
	return v
}

// WaitFor evaluates the JavaScript expression cond every 50 ms until it is
// true, for up to timeout; the test fails with what when it never is.
func (p *Page) WaitFor(t testing.TB, what, cond string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err != nil {
		t.Fatalf("waiting %s for %s: %v (page problems: %q)", timeout, what, err, p.Problems())
	}
}

// Screenshot writes a PNG of the whole page to path.
func (p *Page) Screenshot(t testing.TB, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100 is PNG; less, JPEG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// layoutJS lists, for every <svg> on the page, the text elements whose box
// reaches outside the chart (so part of it is cut off) or overlaps
// another text's box, by their layout boxes (getBoundingClientRect).
// Boxes that touch within half a pixel do not count: a glyph's box holds
// its font's ascent and descent, more than the ink.
const layoutJS = `(() => {
  const out = [];
  const slack = 0.5;
  document.querySelectorAll("svg").forEach((svg, n) => {
    const chart = svg.getBoundingClientRect();
    const name = (svg.getAttribute("aria-label") || "chart " + (n + 1));
    const texts = [...svg.querySelectorAll("text")]
      .map(t => ({ s: t.textContent.trim(), r: t.getBoundingClientRect() }))
      .filter(t => t.s !== "" && t.r.width > 0 && t.r.height > 0);
    for (const t of texts) {
      if (t.r.left < chart.left - slack || t.r.right > chart.right + slack || t.r.top < chart.top - slack || t.r.bottom > chart.bottom + slack) {
        out.push(name + ": \"" + t.s + "\" reaches outside the chart");
      }
    }
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i].r, b = texts[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > slack && h > slack) out.push(name + ": \"" + texts[i].s + "\" overlaps \"" + texts[j].s + "\"");
      }
    }
  });
  return out;
})()`

// TextLayout fails the test for each chart text that is clipped or
// overlaps another (see layoutJS), and returns how many texts it checked.
func (p *Page) TextLayout(t testing.TB) int {
	t.Helper()
	for _, b := range Eval[[]string](t, p, layoutJS) {
		t.Errorf("chart text: %s", b)
	}
	return Eval[int](t, p, `document.querySelectorAll("svg text").length`)
}

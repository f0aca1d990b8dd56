package browser_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/leaktest"
)

// TestMain stops the one browser the tests share, then checks that
// nothing was left running.
func TestMain(m *testing.M) { leaktest.Main(m, browser.Stop) }

// page serves html at / and opens it.
func page(t *testing.T, html string) *browser.Page {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	}))
	t.Cleanup(srv.Close)
	return browser.For(t).Open(t, srv.URL)
}

// TestProblems: a console error and an uncaught exception are both kept;
// a console.log is not a problem. The events come from the browser on
// their own, so the test waits (bounded) until both are in.
func TestProblems(t *testing.T) {
	p := page(t, `<!doctype html><link rel="icon" href="data:,"><script>
console.log("fine"); console.error("broken", 7); throw new Error("thrown");
</script>`)
	has := func(sub string) bool {
		return slices.ContainsFunc(p.Problems(), func(s string) bool { return strings.Contains(s, sub) })
	}
	for deadline := time.Now().Add(10 * time.Second); !(has("console.error: broken") && has("thrown")) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !has("console.error: broken") || !has("exception: ") || has("fine") {
		t.Errorf("problems %q: want the console.error and the exception, not the log", p.Problems())
	}
}

// TestEval: values come back decoded into the type asked for.
func TestEval(t *testing.T) {
	p := page(t, `<!doctype html><link rel="icon" href="data:,"><p id="x">hello</p>`)
	if got := browser.Eval[string](t, p, `document.getElementById("x").textContent`); got != "hello" {
		t.Errorf("Eval string = %q", got)
	}
	if got := browser.Eval[[]int](t, p, `[1, 2, 3]`); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Eval []int = %v", got)
	}
	p.NoProblems(t)
}

// TestTextLayout: the layout check counts every chart text; a chart whose
// texts stay apart and inside gives no finding (TextLayout would fail the
// test), and the same check finds the clipped and overlapping ones of a
// crowded chart.
func TestTextLayout(t *testing.T) {
	p := page(t, `<!doctype html><link rel="icon" href="data:,"><body style="margin:0">
<svg aria-label="tidy" width="200" height="100"><text x="10" y="20">one</text><text x="10" y="60">two</text></svg>
</body>`)
	if n := p.TextLayout(t); n != 2 {
		t.Errorf("TextLayout checked %d texts, want 2", n)
	}
	crowded := page(t, `<!doctype html><link rel="icon" href="data:,"><body style="margin:0">
<svg aria-label="crowded" width="100" height="50"><text x="10" y="20">alpha</text><text x="12" y="22">beta</text><text x="90" y="40">clipped</text></svg>
</body>`)
	found := browser.Eval[[]string](t, crowded, browser.LayoutJS)
	if !slices.ContainsFunc(found, func(s string) bool { return strings.Contains(s, `"clipped" reaches outside`) }) ||
		!slices.ContainsFunc(found, func(s string) bool { return strings.Contains(s, `"alpha" overlaps "beta"`) }) {
		t.Errorf("layout findings %q: want the clipped text and the overlap", found)
	}
}

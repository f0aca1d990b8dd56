package adminui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path, host string) (int, http.Header, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if host != "" {
		r.Host = host
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Result().Header, string(body)
}

// TestHandler: the page, its scripts and the icons are served from the
// binary; the page links nothing on the network and carries the
// target's address for the form.
func TestHandler(t *testing.T) {
	link := NewLink("/socket.io/", false, false)
	link.Listening("[::]:8080", "127.0.0.1:9100")
	h := Handler(link)

	code, hdr, page := get(t, h, "/admin-ui/", "127.0.0.1:9100")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("/admin-ui/: %d %s", code, hdr.Get("Content-Type"))
	}
	for _, bad := range []string{"https://", "http://fonts", "cdn.jsdelivr"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page still links %q:\n%s", bad, page)
		}
	}
	for _, want := range []string{`mdi/css/materialdesignicons.min.css`, `"server_url":"http://127.0.0.1:8080"`, `"path":"/socket.io"`, `"ws_only":"false"`, `"namespace":"/admin"`, `<script src="js/app.`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
	if _, _, page := get(t, h, "/admin-ui/index.html", "localhost:9100"); !strings.Contains(page, `"server_url":"http://localhost:8080"`) {
		t.Errorf("a page asked for at localhost should name the target there:\n%s", page)
	}

	for path, typ := range map[string]string{
		"/admin-ui/js/app.0d7d7845.js":                          "text/javascript",
		"/admin-ui/css/chunk-vendors.9f55d012.css":              "text/css",
		"/admin-ui/favicon.png":                                 "image/png",
		"/admin-ui/mdi/css/materialdesignicons.min.css":         "text/css",
		"/admin-ui/mdi/fonts/materialdesignicons-webfont.woff2": "font/woff2",
		"/admin-ui/img/logo-dark.3727fec5.svg":                  "image/svg+xml",
	} {
		code, hdr, body := get(t, h, path, "")
		if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), typ) || len(body) == 0 {
			t.Errorf("%s: %d %q, %d bytes; want 200 %s", path, code, hdr.Get("Content-Type"), len(body), typ)
		}
	}
	for _, path := range []string{"/admin-ui/js/app.0d7d7845.js.map", "/admin-ui/nope", "/admin-ui/mdi/LICENSE", "/admin-ui/mdi/package.json"} {
		if code, _, _ := get(t, h, path, ""); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	if code, hdr, _ := get(t, h, "/admin-ui", ""); code != http.StatusMovedPermanently || hdr.Get("Location") != "/admin-ui/" {
		t.Errorf("/admin-ui: %d to %q, want a redirect to /admin-ui/", code, hdr.Get("Location"))
	}
}

// TestPrefill: the form's values, over TLS and WebSocket only, and none
// before the target listens.
func TestPrefill(t *testing.T) {
	link := NewLink("/custom/path", true, true)
	if got := prefill(link, "127.0.0.1:9100"); got != nil {
		t.Errorf("before Listening: %s", got)
	}
	link.Listening("10.1.2.3:8443", ":9100")
	got := string(prefill(link, "example.com:9100"))
	for _, want := range []string{`"server_url":"https://10.1.2.3:8443"`, `"path":"/custom/path"`, `"ws_only":"true"`, `knowngood_target`} {
		if !strings.Contains(got, want) {
			t.Errorf("prefill lacks %s: %s", want, got)
		}
	}
}

func TestAllowsOrigin(t *testing.T) {
	cases := []struct {
		admin  string
		origin string
		want   bool
	}{
		{"127.0.0.1:9100", "http://127.0.0.1:9100", true},
		{"127.0.0.1:9100", "http://localhost:9100", true},
		{"127.0.0.1:9100", "http://[::1]:9100", true},
		{"127.0.0.1:9100", "http://127.0.0.1:9101", false},
		{"127.0.0.1:9100", "https://127.0.0.1:9100", false},
		{"127.0.0.1:9100", "http://example.com:9100", false},
		{"127.0.0.1:9100", "http://127.0.0.1", false},
		{"127.0.0.1:9100", "null", false},
		{"127.0.0.1:9100", "", false},
		{"[::]:9100", "http://example.com:9100", true},
		{":9100", "http://10.0.0.7:9100", true},
		{"10.0.0.7:9100", "http://10.0.0.7:9100", true},
		{"10.0.0.7:9100", "http://10.0.0.8:9100", false},
		{"", "http://127.0.0.1:9100", false},
	}
	for _, c := range cases {
		l := NewLink("/socket.io", false, false)
		l.Listening("127.0.0.1:8080", c.admin)
		if got := l.AllowsOrigin(c.origin); got != c.want {
			t.Errorf("admin %q, Origin %q: %v, want %v", c.admin, c.origin, got, c.want)
		}
	}
	var none *Link
	if none.AllowsOrigin("http://127.0.0.1:9100") {
		t.Error("a nil Link allows an origin")
	}
}

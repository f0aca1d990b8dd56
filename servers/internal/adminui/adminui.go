// Package adminui serves the official Socket.IO Admin UI, npm
// @socket.io/admin-ui 0.5.1 (its ui/dist, the page a browser runs), from
// the binary: its files are vendored in npm/ as the package ships them
// and embedded, so the admin listener serves the page where there is no
// network. What the Socket.IO targets serve it on their side, the /admin
// namespace, is in servers/socketio (adminui.go).
//
// The page as the package ships it loads two stylesheets from the
// network: the Roboto font from Google Fonts and the Material Design
// Icons from jsDelivr. Served here, Roboto is left out (the browser's own
// sans-serif takes its place) and the icons come from npm/mdi-font, the
// files of npm @mdi/font 7.4.47 that the stylesheet uses. The vendored
// files stay byte for byte the packages' (TestVendoredFiles): the page
// is changed as it is served, and so is the connection form, pre-filled
// with the target's address (Link).
//
// An upgrade is one copy and one test: copy the new version's files over
// npm/ (make deps installs the versions scripts/package.json pins) and
// run go test ./servers/internal/adminui, which says which files differ.
package adminui

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// The vendored packages, as the npm registry ships them, and the files of
// each that are served (the source maps are left out: only a browser's
// developer tools read them, and they are three quarters of the bytes).
//
//go:embed npm
var vendored embed.FS

// Version is the @socket.io/admin-ui version vendored.
const Version = "0.5.1"

// Prefix is where the admin listener serves the page.
const Prefix = "/admin-ui/"

// The parts of the shipped index.html changed as it is served.
const (
	robotoLink = `<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto:100,300,400,500,700,900">`
	mdiCDN     = `https://cdn.jsdelivr.net/npm/@mdi/font@latest/css/materialdesignicons.min.css`
	mdiLocal   = `mdi/css/materialdesignicons.min.css`
	headEnd    = `</head>`
)

var (
	uiFiles  = sub("npm/socket.io-admin-ui/ui/dist")
	mdiFiles = sub("npm/mdi-font")
	// index is the shipped index.html without its network stylesheets.
	index = offline(must(fs.ReadFile(uiFiles, "index.html")))
	// started dates the files for If-Modified-Since: they change only
	// with the binary.
	started = time.Now()
)

func sub(dir string) fs.FS { return must(fs.Sub(vendored, dir)) }

func must[T any](v T, err error) T {
	if err != nil {
		panic("adminui: the vendored files are incomplete: " + err.Error())
	}
	return v
}

// offline is the shipped page without what it loads from the network:
// Roboto dropped, the icons' stylesheet served from here. A page that
// no longer holds either link panics at start, so that an upgrade that
// changes them is caught by any test of this package.
func offline(page []byte) []byte {
	if !bytes.Contains(page, []byte(robotoLink)) || !bytes.Contains(page, []byte(mdiCDN)) || !bytes.Contains(page, []byte(headEnd)) {
		panic("adminui: the vendored index.html no longer links Roboto and the icons as 0.5.1 did: see offline()")
	}
	page = bytes.Replace(page, []byte(robotoLink), nil, 1)
	return bytes.Replace(page, []byte(mdiCDN), []byte(mdiLocal), 1)
}

// Handler serves the page under Prefix; link pre-fills its connection
// form with the target's address.
func Handler(link *Link) http.Handler {
	ui := http.FileServerFS(uiFiles)
	mdi := http.StripPrefix(Prefix+"mdi/", http.FileServerFS(mdiFiles))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
		switch {
		case !ok:
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		case rest == "" || rest == "index.html":
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			page := bytes.Replace(index, []byte(headEnd), append(prefill(link, r.Host), headEnd...), 1)
			http.ServeContent(w, r, "index.html", started, bytes.NewReader(page))
		case strings.HasPrefix(rest, "mdi/css/") || strings.HasPrefix(rest, "mdi/fonts/"):
			mdi.ServeHTTP(w, r)
		default:
			u := *r.URL
			u.Path, u.RawPath = "/"+rest, ""
			r2 := *r
			r2.URL = &u
			ui.ServeHTTP(w, &r2)
		}
	})
}

// prefill is a script that fills the connection form the page reads from
// its local storage (server_url, path, ws_only, namespace) with the
// target's address, the first time the page is opened and whenever the
// target's address has changed since: what a user types there after that
// is kept across reloads. The page then connects at once, as it does when
// it finds a server URL stored.
func prefill(link *Link, pageHost string) []byte {
	target := link.TargetURL(pageHost)
	if target == "" {
		return nil
	}
	values, _ := json.Marshal(map[string]string{
		"server_url": target,
		"path":       link.Path,
		"ws_only":    fmt.Sprint(link.WSOnly),
		"namespace":  "/admin",
	})
	key, _ := json.Marshal(target + link.Path)
	return fmt.Appendf(nil, `<script>(function(){try{var v=%s,k=%s;`+
		`if(localStorage.getItem("knowngood_target")===k)return;`+
		`for(var n in v)localStorage.setItem(n,v[n]);localStorage.setItem("knowngood_target",k)}catch(e){}})()</script>`,
		values, key)
}

package socketio

import (
	"bytes"
	"io"
	"net/http"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
)

// interop counts the requests that a known server mishandles, so that a
// user whose client sends them learns it here (loadgen watch warns), and
// while -fault-drop-chunked-post is in force (f) answers them as that
// server does, for a client author who cannot install it.
//
// chunked_post: a polling POST without Content-Length. The zishang520 Go
// client sends every POST with Transfer-Encoding: chunked (it hands
// net/http a reader whose length net/http cannot see), which HTTP/1.1
// allows (RFC 9112, 6.1: a recipient must parse the chunked coding).
// python-engineio 4 (Debian 12's python3-engineio 4.3) reads
// CONTENT_LENGTH bytes of a POST, 0 when the header is absent, so it
// decodes no packet and answers 200 OK: the client's CONNECT is never
// acknowledged, and later its PONGs are lost too. Node's engine.io and
// both engines here read the body to its end.
func interop(f *faults.Injector, maxPayload int64, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodPost || r.ContentLength >= 0 || q.Get("transport") != "polling" || q.Get("sid") == "" {
			next.ServeHTTP(w, r)
			return
		}
		// An empty chunked body loses nothing anywhere: count only one
		// that carries packets.
		if n, _ := bufferBody(r, maxPayload+1); n == 0 {
			next.ServeHTTP(w, r)
			return
		}
		m.Interop(metrics.InteropChunkedPost)
		if !f.DropChunkedPost() {
			next.ServeHTTP(w, r)
			return
		}
		// python-engineio's answer: 200, text/plain, "OK", and the
		// credentials header it always sets (the origin one only for an
		// allowed Origin, which the targets allow unless -origin).
		if origin := r.Header.Get("Origin"); origin != "" {
			w.Header().Set("Access-Control-Allow-Origin", origin)
		}
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("OK"))
	})
}

// bufferBody reads up to limit bytes of r's body into memory and puts
// them back as its body, with the error the read ended on (a cut or
// timed-out body) still to come after them, so that the handler sees the
// same body; it returns how many bytes it read, and that error. A body
// read already reads again from memory.
func bufferBody(r *http.Request, limit int64) (int, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return 0, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	var rest io.Reader = bytes.NewReader(body)
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
	} else if int64(len(body)) == limit {
		// More may follow: the handler reads the rest and refuses it
		// past its limit.
		rest = io.MultiReader(rest, r.Body)
	}
	r.Body = readCloser{rest, r.Body}
	return len(body), err
}

// readCloser reads from the buffered body and closes the original.
type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

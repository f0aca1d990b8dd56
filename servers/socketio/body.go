package socketio

import (
	"errors"
	"net"
	"net/http"
)

// wholeBody reads a polling POST's body before the engine sees it, so
// that a body that never ends (-body-timeout) or ends early (the client
// cut it) gets an answer of its own, and the session ends, as on Node,
// where engine.io closes a session whose data request failed ("transport
// error"): 408 for a body timed out, as Node's http server answers one,
// 400 for one cut short. Without this, an engine that reads an error
// from the body answers as if the packets had been taken (200).
//
// The body is held in memory up to the engine's own limit, which then
// refuses a larger one (413); the engines read it whole anyway.
func wholeBody(maxPayload int64, end func(sid string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if _, err := bufferBody(r, maxPayload+1); err != nil {
			status, why := http.StatusBadRequest, "the request body was cut short"
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				status, why = http.StatusRequestTimeout, "the request body did not arrive within -body-timeout"
			}
			w.Header().Set("Connection", "close")
			http.Error(w, why, status)
			if sid := r.URL.Query().Get("sid"); sid != "" {
				end(sid)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// transportError ends session sid of the default engine as engine.io ends
// one whose data request failed.
func (s *Server) transportError(sid string) {
	v, ok := s.sessions.Load(sid)
	if !ok {
		return
	}
	conn := v.(*session).conn
	if c, ok := conn.(interface{ OnClose(string, ...error) }); ok {
		c.OnClose("transport error", errBodyFailed)
		return
	}
	conn.Close(true)
}

var errBodyFailed = errors.New("polling POST body cut or timed out")

package target

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// Kinds of refused upgrade, by the target's HTTP status and the reason in
// its body.
const (
	KindAtCap       = "HTTP 503 (server at -max-conns)"
	KindFaultReject = "HTTP 503 (fault injected, -fault-reject)"
	KindShutdown    = "HTTP 503 (server shutting down)"
)

// Refused is an upgrade the target answered with an HTTP status instead
// of 101: Reason is the start of its body, the server's own reason. It
// wraps websocket.ErrBadHandshake.
type Refused struct {
	Status int
	Reason string
	// What was refused: "upgrade" when empty, or the request ("GET").
	What string
}

func (e *Refused) Error() string {
	what := e.What
	if what == "" {
		what = "upgrade"
	}
	s := fmt.Sprintf("%s refused with HTTP %d %s", what, e.Status, http.StatusText(e.Status))
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func (e *Refused) Unwrap() error { return websocket.ErrBadHandshake }

// Kind sorts the refusal for an error tally: a 503 by its reason (the
// -max-conns cap, an injected fault, a shutdown), any other status by
// its number.
func (e *Refused) Kind() string { return RefusalKind(e.Status, e.Reason) }

// KindOr is the kind of a refusal that err holds, or otherwise.
func KindOr(err error, otherwise string) string {
	var refused *Refused
	if errors.As(err, &refused) {
		return refused.Kind()
	}
	return otherwise
}

// RefusalKind is Refused.Kind for a status and the body's reason.
func RefusalKind(status int, reason string) string {
	if status == http.StatusServiceUnavailable {
		switch {
		case strings.Contains(reason, "-max-conns"):
			return KindAtCap
		case strings.Contains(reason, "-fault-reject"):
			return KindFaultReject
		case strings.Contains(reason, "shutting down"):
			return KindShutdown
		}
	}
	return fmt.Sprintf("HTTP %d (upgrade refused)", status)
}

// maxReason bounds the reason kept from a refusal's body.
const maxReason = 200

// reasonOf is the first line of body, at most maxReason bytes.
func reasonOf(body io.Reader) string {
	if body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(body, maxReason))
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// reasonOfResponse reads the body's reason from a raw HTTP response (the
// status line first), as gobwas/ws hands it to OnStatusError.
func reasonOfResponse(raw io.Reader) string {
	res, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	return reasonOf(res.Body)
}
